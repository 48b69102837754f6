#if os(Linux)
import Foundation
import Testing

/// LOG_FORMAT=json, through the built binary: a logged value holding DEL, C1 controls (U+009B is ESC [ to a terminal,
/// U+0085 a line break to some) and U+2028 (a line break to JavaScript and to log viewers) is written with them escaped
/// as \uXXXX, each line still one JSON object that parses to the text that was logged.
@Suite("LOG_FORMAT=json escapes DEL, C1 controls and U+2028/U+2029", .ownThread)
struct LogJSONEscapingTests {
    @Test("`work` logging a DATABASE_URL socket directory that holds them: escaped, and parsed back to the same text")
    func databaseErrorLogged() async throws {
        // libpq quotes the socket directory in its error, which the worker logs (TerminalEscapingTests.workLogging).
        let directory = "/tmp/rw-\(UUID().uuidString.prefix(8))\u{9B}31m\u{7F}\u{85}\u{2028}\u{2029}\u{202E}x"
        let worker = try await TerminalEscapingTests.workLogging(socketDirectory: directory, format: "json")
        let logged = try #require(worker.line, "\(worker.output.debugDescription)")

        let raw = worker.output.unicodeScalars.filter { (0x7F...0x9F).contains($0.value) || $0.value == 0x2028
            || $0.value == 0x2029 || $0.value == 0x202E }
        #expect(raw.isEmpty, "\(worker.output.debugDescription)")
        #expect(logged.contains(#"\u009b31m\u007f\u0085\u2028\u2029\u202ex"#), "\(logged.debugDescription)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(logged.utf8)) as? [String: String])
        #expect(object["error"]?.contains("\"\(directory)/.s.PGSQL.") == true, "\(logged.debugDescription)")
    }
}

#endif
