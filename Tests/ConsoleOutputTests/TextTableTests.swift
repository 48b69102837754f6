import ConsoleOutput
import Testing

/// `TextTable` prints database and Apple text (`status`'s latest error, `lookup-order`'s ids, a reconciliation's SKU):
/// it escapes every cell itself, so no table can send an escape sequence, break a line or reorder one.
@Suite("TextTable: every cell escaped")
struct TextTableTests {
    /// Characters that must never reach the terminal raw.
    static let dangerous: Set<Unicode.Scalar> = ["\u{1B}", "\u{9B}", "\u{202E}", "\u{2066}", "\u{7F}", "\u{85}",
                                                  "\u{2028}", "\u{07}", "\r"]

    @Test("ESC, CSI (U+009B), DEL, NEL, U+2028, BEL and the bidi overrides in cells and header are shown escaped")
    func cellsEscaped() {
        let table = TextTable(
            ["state", "latest error\u{1B}[2J"],
            [
                ["failed", "Apple said \u{1B}[31mred\u{1B}[0m \u{9B}2J \u{202E}lanigiro\u{2066}"],
                ["retry\u{7F}", "a\u{85}b\u{2028}c\u{07}\r\nforged line"],
            ]
        )
        let output = table.render()
        #expect(!output.unicodeScalars.contains { Self.dangerous.contains($0) }, "\(output.debugDescription)")
        #expect(output.split(separator: "\n").count == 4, "a cell broke a line: \(output.debugDescription)")
        #expect(output.contains(#"Apple said \u{1b}[31mred\u{1b}[0m \u{9b}2J \u{202e}lanigiro\u{2066}"#))
        #expect(output.contains(#"retry\u{7f}  a\u{85}b\u{2028}c\u{7}\r\nforged line"#))
        #expect(output.contains(#"latest error\u{1b}[2J"#))
    }

    @Test("columns are as wide as the escaped text, so the table stays aligned")
    func alignedOnEscapedText() {
        let output = TextTable(["a", "b"], [["\u{9B}", "x"], ["abc", "y"]]).render()
        #expect(output == """
              a       b
              ------  -
              \\u{9b}  x
              abc     y
            """)
    }

    @Test("ordinary text (é, £, €, emoji, CJK) and numbers are printed as they are")
    func ordinaryCells() {
        let output = TextTable(["product", "price"], [["coins.100 🪙 注文", "£1.99 €2,49 café"]]).render()
        #expect(output.hasSuffix("  coins.100 🪙 注文  £1.99 €2,49 café"))
    }
}
