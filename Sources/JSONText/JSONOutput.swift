import Foundation

/// JSON that the program prints (`reconcile --json`, `bench --json`, LOG_FORMAT=json): `JSONEncoder`'s document, keys
/// sorted and slashes unescaped, with the characters a terminal or a log pipeline would act on escaped as
/// `JSONTextWriter.string` escapes them (JSONEncoder escapes only those below U+0020). Text from outside (an Apple
/// report's SKU, a log message quoting input) cannot send escape sequences, break a line or reorder one.
public enum JSONOutput {
    /// `value` as one line of JSON; `snakeCaseKeys` converts the keys (`runId` is `run_id`).
    public static func line(_ value: some Encodable, snakeCaseKeys: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if snakeCaseKeys { encoder.keyEncodingStrategy = .convertToSnakeCase }
        let document = JSONTextWriter.escapingControls(inDocument: Array(try encoder.encode(value)))
        return String(decoding: document, as: UTF8.self)
    }
}
