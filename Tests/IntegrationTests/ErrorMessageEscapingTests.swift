#if os(Linux)
import Foundation
import Testing

/// A command's last words ("Error: …") quote what was wrong, and what was wrong may come from outside: a setting's
/// value, a report's line, Apple's answer. What a terminal would act on is escaped there too.
@Suite struct ErrorMessageEscapingTests {
    @Test("a refused setting is quoted with its control and bidirectional characters escaped")
    func refusedSettingIsEscaped() throws {
        let hostile = "\u{1b}[31mred\u{9b}2J\u{202e}txt\u{7f}"
        let child = try OverflowWriterSettingTests.work(writeConnections: hostile)
        let status = child.wait(timeout: 60)
        let output = child.output
        #expect(status == 2, "\(output)")
        #expect(output.contains("WRITE_CONNECTIONS must be a whole number"), "\(output)")
        for raw in ["\u{1b}", "\u{9b}", "\u{202e}", "\u{7f}"] {
            #expect(!output.contains(raw), "the message printed \(raw.unicodeScalars.first!.value) raw: \(output.debugDescription)")
        }
        #expect(output.contains("\\u{1b}[31mred\\u{9b}2J\\u{202e}txt\\u{7f}"), "\(output)")
    }
}
#endif
