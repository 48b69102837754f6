import Foundation

/// Decoding without Foundation's `JSONDecoder` on the hot path: the same fields and lenient rules as the
/// `Decodable` initializers, read by `JSONScanner`. Whatever the scanner does not handle throws
/// `JSONScanner.Unsupported`; `decode(_:)` then asks `JSONDecoder`, whose answer or error is the reference.
/// Debug builds decode every input both ways and check that they agree.
extension VerifyReceiptResponse {
    /// Apple's answer in `body`, as `JSONDecoder` would decode it (and with its errors).
    public static func decode(_ body: [UInt8]) throws -> VerifyReceiptResponse {
        guard let fast = try? scanned(body) else {
            return try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body))
        }
        #if DEBUG
        let reference = try? JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body))
        assert(reference == fast, "JSONScanner and JSONDecoder disagree on a verifyReceipt answer")
        #endif
        return fast
    }

    static func scanned(_ body: [UInt8]) throws -> VerifyReceiptResponse {
        var scanner = JSONScanner(body)
        scanner.skipWhitespace()
        var response = VerifyReceiptResponse(status: 0)
        var status: Int64?
        var hyphenRetryable: Bool?
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "status":
                try seen.insert(0)
                status = try scanner.readLenientInt64()
            case "environment":
                try seen.insert(1)
                response.environment = try scanner.readLenientString()
            case "is_retryable":
                try seen.insert(2)
                response.isRetryable = try scanner.readLenientBool()
            case "is-retryable":
                try seen.insert(3)
                hyphenRetryable = try scanner.readLenientBool()
            case "receipt":
                try seen.insert(4)
                response.receipt = try scanner.readNull() ? nil : try ReceiptInfo(scanning: &scanner)
            case "latest_receipt_info":
                try seen.insert(5)
                response.latestReceiptInfo = try scanner.readNull() ? nil : try [InAppTransaction](scanning: &scanner)
            case "pending_renewal_info":
                try seen.insert(6)
                response.pendingRenewalInfo =
                    try scanner.readNull() ? nil : try [PendingRenewalInfo](scanning: &scanner)
            case "latest_receipt":
                try seen.insert(7)
                response.latestReceipt = try scanner.readLenientString()
            default:
                try scanner.skipValue()
            }
        }
        try scanner.finish()
        guard let status, let small = Int(exactly: status) else { throw JSONScanner.Unsupported() }
        response.status = small
        response.isRetryable = response.isRetryable ?? hyphenRetryable
        return response
    }
}

extension ReceiptInfo {
    public init(scanning scanner: inout JSONScanner) throws {
        self.init(bundleId: nil, inApp: nil)
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "bundle_id":
                try seen.insert(0)
                bundleId = try scanner.readLenientString()
            case "application_version":
                try seen.insert(1)
                applicationVersion = try scanner.readLenientString()
            case "original_application_version":
                try seen.insert(2)
                originalApplicationVersion = try scanner.readLenientString()
            case "receipt_type":
                try seen.insert(3)
                receiptType = try scanner.readLenientString()
            case "receipt_creation_date_ms":
                try seen.insert(4)
                receiptCreationDateMs = try scanner.readLenientInt64()
            case "request_date_ms":
                try seen.insert(5)
                requestDateMs = try scanner.readLenientInt64()
            case "in_app":
                try seen.insert(6)
                inApp = try scanner.readNull() ? nil : try [InAppTransaction](scanning: &scanner)
            default:
                try scanner.skipValue()
            }
        }
    }
}

extension InAppTransaction {
    public init(scanning scanner: inout JSONScanner) throws {
        self.init(quantity: nil, productId: nil, transactionId: nil, purchaseDateMs: nil)
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "quantity":
                try seen.insert(0)
                guard let value = try scanner.readLenientInt64() else { return }
                quantity = Int(exactly: value)
            case "product_id":
                try seen.insert(1)
                productId = try scanner.readLenientString()
            case "transaction_id":
                try seen.insert(2)
                transactionId = try scanner.readLenientString()
            case "original_transaction_id":
                try seen.insert(3)
                originalTransactionId = try scanner.readLenientString()
            case "web_order_line_item_id":
                try seen.insert(4)
                webOrderLineItemId = try scanner.readLenientString()
            case "purchase_date_ms":
                try seen.insert(5)
                purchaseDateMs = try scanner.readLenientInt64()
            case "original_purchase_date_ms":
                try seen.insert(6)
                originalPurchaseDateMs = try scanner.readLenientInt64()
            case "expires_date_ms":
                try seen.insert(7)
                expiresDateMs = try scanner.readLenientInt64()
            case "cancellation_date_ms":
                try seen.insert(8)
                cancellationDateMs = try scanner.readLenientInt64()
            case "cancellation_reason":
                try seen.insert(9)
                cancellationReason = try scanner.readLenientString()
            case "is_trial_period":
                try seen.insert(10)
                isTrialPeriod = try scanner.readLenientBool()
            case "is_in_intro_offer_period":
                try seen.insert(11)
                isInIntroOfferPeriod = try scanner.readLenientBool()
            case "in_app_ownership_type":
                try seen.insert(12)
                inAppOwnershipType = try scanner.readLenientString()
            default:
                try scanner.skipValue()
            }
        }
    }
}

extension PendingRenewalInfo {
    public init(scanning scanner: inout JSONScanner) throws {
        self.init(productId: nil, autoRenewProductId: nil, originalTransactionId: nil, autoRenewStatus: nil)
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "product_id":
                try seen.insert(0)
                productId = try scanner.readLenientString()
            case "auto_renew_product_id":
                try seen.insert(1)
                autoRenewProductId = try scanner.readLenientString()
            case "original_transaction_id":
                try seen.insert(2)
                originalTransactionId = try scanner.readLenientString()
            case "auto_renew_status":
                try seen.insert(3)
                autoRenewStatus = try scanner.readLenientString()
            default:
                try scanner.skipValue()
            }
        }
    }
}

extension Array where Element == InAppTransaction {
    public init(scanning scanner: inout JSONScanner) throws {
        self.init()
        var elements: [InAppTransaction] = []
        try scanner.readArray { scanner in elements.append(try InAppTransaction(scanning: &scanner)) }
        self = elements
    }
}

extension Array where Element == PendingRenewalInfo {
    public init(scanning scanner: inout JSONScanner) throws {
        self.init()
        var elements: [PendingRenewalInfo] = []
        try scanner.readArray { scanner in elements.append(try PendingRenewalInfo(scanning: &scanner)) }
        self = elements
    }
}
