import Foundation
import JSONText

/// Encoding without Foundation's `JSONEncoder`, for the body of every call to Apple: the document the `Encodable`
/// conformance makes, keys from the same `CodingKeys`. Debug builds compare the two.
extension VerifyReceiptRequest {
    public func jsonBytes() -> [UInt8] {
        var writer = JSONTextWriter(capacity: receiptData.utf8.count + (password?.utf8.count ?? 0) + 72)
        writer.open()
        writer.member(CodingKeys.receiptData, receiptData)
        writer.member(CodingKeys.password, password)
        writer.key(CodingKeys.excludeOldTransactions)
        writer.raw(excludeOldTransactions ? "true" : "false")
        writer.close()
        #if DEBUG
        if let reference = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(self)) as? NSDictionary {
            let written = try? JSONSerialization.jsonObject(with: Data(writer.bytes)) as? NSDictionary
            assert(reference == written, "jsonBytes() differs from JSONEncoder")
        }
        #endif
        return writer.bytes
    }
}
