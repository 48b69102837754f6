import Foundation

/// Base64 as apps and scripts send it: line breaks and spaces allowed anywhere, padding optional.
public enum Base64Text {
    /// The decoded bytes, or nil when the text (after removing whitespace) is not base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var compact = [UInt8]()
        compact.reserveCapacity(text.utf8.count)
        for byte in text.utf8 where !Self.isWhitespace(byte) {
            compact.append(byte)
        }
        guard !compact.isEmpty else { return nil }
        while compact.count % 4 != 0 {
            compact.append(UInt8(ascii: "="))
        }
        guard let data = Data(base64Encoded: Data(compact)) else { return nil }
        return [UInt8](data)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
            || byte == UInt8(ascii: "\t")
    }
}
