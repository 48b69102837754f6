/// Why a `receipt-data` string could not be read as an app receipt.
public struct AppReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The text is not base64.
        case notBase64
        /// The bytes are not a PKCS#7 SignedData structure.
        case notPKCS7
        /// The PKCS#7 structure carries no receipt payload.
        case noPayload
        /// The payload is not the attribute set an app receipt holds.
        case malformedPayload
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "app receipt: \(message)" }
}
