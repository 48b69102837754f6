import Foundation

extension VerifyReceiptRequest {
    /// A request body, as `JSONDecoder` would decode it: read by `JSONScanner` when it can, by `JSONDecoder`
    /// otherwise (its answer or error is the reference; debug builds check the two agree).
    public static func decode(_ body: [UInt8]) throws -> VerifyReceiptRequest {
        guard let fast = try? scanned(body) else {
            return try JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body))
        }
        #if DEBUG
        let reference = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body))
        assert(reference == fast, "JSONScanner and JSONDecoder disagree on a verifyReceipt request")
        #endif
        return fast
    }

    static func scanned(_ body: [UInt8]) throws -> VerifyReceiptRequest {
        var scanner = JSONScanner(body)
        scanner.skipWhitespace()
        var request = VerifyReceiptRequest(receiptData: "", password: nil)
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "receipt-data":
                try seen.insert(0)
                request.receiptData = try scanner.readLenientString() ?? ""
            case "password":
                try seen.insert(1)
                request.password = try scanner.readLenientString()
            case "exclude-old-transactions":
                try seen.insert(2)
                request.excludeOldTransactions = try scanner.readLenientBool() ?? false
            default:
                try scanner.skipValue()
            }
        }
        try scanner.finish()
        return request
    }
}
