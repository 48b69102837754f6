/// The checks `enqueue_receipt()` makes, repeated where the worker takes a job (rows may be inserted directly).
public enum ReceiptInput {
    /// Why a receipt cannot be sent to Apple at all, or nil. Line breaks and spaces inside base64 are fine.
    public static func problem(_ receipt: String?, maxBytes: Int) -> String? {
        guard let receipt else { return "receipt_data is missing" }
        if receipt.utf8.count > maxBytes {
            return "receipt_data is \(receipt.utf8.count) bytes, over the limit of \(maxBytes)"
        }
        var length = 0
        var padding = 0
        for byte in receipt.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                continue
            case UInt8(ascii: "="):
                padding += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                if padding > 0 { return "receipt_data is not base64" }
            default:
                return "receipt_data is not base64"
            }
            length += 1
        }
        if length == 0 { return "receipt_data is empty" }
        if padding > 2 || length % 4 != 0 { return "receipt_data is not base64" }
        return nil
    }
}
