import ConsoleOutput
import Testing

/// `TerminalText.message`: a message of the program's own keeps its line breaks, tabs and backslashes; what it
/// quotes loses its power over the terminal.
@Suite struct TerminalMessageTests {
    @Test func keepsTheMessagesOwnLayout() {
        let text = "could not read the report:\n\tline 3: \\u{1b} already escaped, é € 日本"
        #expect(TerminalText.message(text) == text)
    }

    @Test func escapesWhatATerminalWouldActOn() {
        #expect(TerminalText.message("got \"\u{1b}[2J\"") == "got \"\\u{1b}[2J\"")
        #expect(TerminalText.message("a\u{9b}b\u{7f}c\r") == "a\\u{9b}b\\u{7f}c\\u{d}")
        #expect(TerminalText.message("x\u{202e}y\u{2066}z\u{2028}") == "x\\u{202e}y\\u{2066}z\\u{2028}")
    }
}
