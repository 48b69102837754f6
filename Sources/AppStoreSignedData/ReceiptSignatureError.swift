/// Why an app receipt's PKCS#7 signature was not accepted. Every case means the receipt's contents cannot be trusted
/// (the job is rejected `invalid_receipt`); none is worth a retry.
public struct ReceiptSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Not base64, not a PKCS#7 SignedData, or a structure this check cannot read.
        case malformed
        /// A digest or signature algorithm other than RSA PKCS#1 v1.5 with SHA-1 or SHA-256 (what Apple uses).
        case unsupportedAlgorithm
        /// The signer's certificate is not in the receipt.
        case signerNotFound
        /// The signed attributes' message digest does not match the content.
        case digestMismatch
        /// The signature does not match the signer certificate's key.
        case badSignature
        /// The signed payload is not a receipt, or has no creation date to check the chain at.
        case badPayload
        /// The signer's chain does not lead to a pinned root, lacks Apple's receipt-signing marks, or was not valid at
        /// the receipt's creation date.
        case untrustedChain
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "receipt signature: \(message)" }
}
