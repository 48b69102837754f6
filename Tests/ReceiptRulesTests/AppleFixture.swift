import AppleFixtureFiles
import Foundation
import ReceiptRules
import Testing

/// A real verifyReceipt response from `../shared/fixtures/apple` (see its README), read where it is, never copied,
/// and turned into `ReceiptContents` with Foundation's JSONSerialization: the rules module itself decodes no JSON.
struct AppleFixture {
    /// The parsed response: Apple's status, and the receipt's contents (`receipt.in_app` then `latest_receipt_info`).
    let status: Int
    let receipt: ReceiptContents
    let inAppCount: Int
    let latestReceiptInfoCount: Int
    /// Every entry's `purchase_date` as Apple printed it ("2020-07-22 17:39:06 Etc/GMT"), by `purchase_date_ms`.
    let printedPurchaseDates: [Int64: String]

    init(named name: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(try AppleFixtureFiles.bytes(name)))
        let json = try #require(object as? [String: Any], "\(name) is not a JSON object")
        let receiptJSON = try #require(json["receipt"] as? [String: Any], "\(name) has no receipt")
        let inApp = receiptJSON["in_app"] as? [[String: Any]] ?? []
        let latest = json["latest_receipt_info"] as? [[String: Any]] ?? []
        let environmentName = try #require(Self.string(json["environment"]), "\(name) has no environment")

        status = try #require(Self.int64(json["status"]).map(Int.init), "\(name) has no status")
        receipt = ReceiptContents(
            environment: try #require(PurchaseEnvironment(rawValue: environmentName)),
            bundleId: Self.string(receiptJSON["bundle_id"]),
            entries: try (inApp + latest).map(Self.purchase)
        )
        inAppCount = inApp.count
        latestReceiptInfoCount = latest.count
        var printed: [Int64: String] = [:]
        for entry in inApp + latest {
            if let ms = Self.int64(entry["purchase_date_ms"]), let text = Self.string(entry["purchase_date"]) {
                printed[ms] = text
            }
        }
        printedPurchaseDates = printed
    }

    private static func purchase(_ entry: [String: Any]) throws -> Purchase {
        Purchase(
            transactionId: try #require(string(entry["transaction_id"]), "entry without transaction_id"),
            originalTransactionId: string(entry["original_transaction_id"]),
            webOrderLineItemId: string(entry["web_order_line_item_id"]),
            productId: try #require(string(entry["product_id"]), "entry without product_id"),
            quantity: int64(entry["quantity"]).map(Int.init) ?? 1,
            purchaseDateMs: int64(entry["purchase_date_ms"]),
            expiresDateMs: int64(entry["expires_date_ms"]),
            cancellationDateMs: int64(entry["cancellation_date_ms"]),
            cancellationReason: string(entry["cancellation_reason"])
        )
    }

    /// Apple sends ids and numbers as strings or as JSON numbers.
    private static func string(_ value: Any?) -> String? {
        switch value {
        case let text as String: text
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    private static func int64(_ value: Any?) -> Int64? {
        switch value {
        case let text as String: Int64(text)
        case let number as NSNumber: number.int64Value
        default: nil
        }
    }
}
