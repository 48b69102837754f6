import ConsoleOutput
import Foundation
import JSONText
import Logging

/// Logging for the executable: human-readable lines by default, one JSON object per line with LOG_FORMAT=json.
/// Logs carry job ids, order ids and short receipt hashes, never receipts or the shared secret.
enum LogSetup {
    static func bootstrap(format: String, level: String) throws {
        guard let logLevel = Logger.Level(rawValue: level.lowercased()) else {
            throw ConfigurationError(
                .invalid, "LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical"
            )
        }
        switch format.lowercased() {
        case "text", "":
            LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: .text, logLevel: logLevel) }
        case "json":
            LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: .json, logLevel: logLevel) }
        default:
            throw ConfigurationError(.invalid, "LOG_FORMAT must be text or json, got \"\(format)\"")
        }
    }
}

/// One line per event on standard error, as text or as a JSON object. In text, line breaks in values are folded into
/// "; " (libpq's messages run over several lines, continued with a tab) and every label, key, value and message goes
/// through `TerminalText.escaped` (control characters, line separators, bidirectional overrides); JSON escapes them
/// itself. So no input can forge a log line.
struct LineLogHandler: LogHandler {
    enum Format { case text, json }

    let label: String
    let format: Format
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, format: Format, logLevel: Logger.Level) {
        self.label = label
        self.format = format
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 })
        let time = Date.now.ISO8601Format(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        switch format {
        case .json:
            // time, level, message, logger, then the metadata as strings.
            var object = fields.mapValues { "\($0)" }
            object["time"] = time
            object["level"] = event.level.rawValue
            object["message"] = event.message.description
            object["logger"] = label
            // JSONOutput escapes U+007F, the C1 controls and U+2028/U+2029 too (JSONEncoder leaves them raw).
            guard let line = try? JSONOutput.line(object) else { return }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        case .text:
            // time, level, label, metadata as key=value, source, message.
            func escaped(_ text: String) -> String { TerminalText.escaped(text) }
            var line = "\(time) \(event.level) \(escaped(label)):"
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                line += " \(escaped(key))=\(escaped(LogText.oneLine("\(value)")))"
            }
            line += " [\(escaped(event.source))] \(escaped(LogText.oneLine(event.message.description)))\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
    }
}

/// Text for one line of a log or an error message.
enum LogText {
    /// Folds the lines of a multi-line text (libpq's "…failed: Connection refused\n\tIs the server running…") into
    /// one, "; " between them, each line's leading and trailing blanks trimmed and empty lines dropped. A text of one
    /// line is returned as it is.
    static func oneLine(_ text: String) -> String {
        guard text.contains(where: \.isNewline) else { return text }
        return text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }
}
