import AppStoreClient
import AppStoreModel
import ReceiptRules
import Testing

/// `VerifyReceiptResponse.contents(environment:)`: Apple's entries turned into the rules' purchases.
@Suite("VerifyReceiptResponse.contents")
struct ReceiptContentsTests {
    private func entry(
        _ transactionId: String?,
        product: String? = "com.example.gems",
        original: String? = nil,
        webOrder: String? = nil,
        quantity: Int? = 1
    ) -> InAppTransaction {
        InAppTransaction(
            quantity: quantity, productId: product, transactionId: transactionId, originalTransactionId: original,
            webOrderLineItemId: webOrder, purchaseDateMs: 1_594_755_400_000
        )
    }

    private func response(inApp: [InAppTransaction]?, latest: [InAppTransaction]? = nil) -> VerifyReceiptResponse {
        VerifyReceiptResponse(
            status: 0, environment: "Production",
            receipt: ReceiptInfo(bundleId: "com.example.app", inApp: inApp), latestReceiptInfo: latest
        )
    }

    @Test("entries without a transaction id or a product id are dropped")
    func dropsUncreditable() {
        let contents = response(inApp: [
            entry("1"), entry(nil), entry(""), entry("2", product: nil), entry("3", product: ""), entry("4"),
        ]).contents(environment: .production)
        #expect(contents.entries.map(\.transactionId) == ["1", "4"])
    }

    @Test("original_transaction_id falls back to transaction_id")
    func originalFallback() throws {
        let contents = response(inApp: [entry("10"), entry("11", original: ""), entry("12", original: "5")])
            .contents(environment: .production)
        #expect(contents.entries.map(\.originalTransactionId) == ["10", "11", "5"])
    }

    @Test("web_order_line_item_id \"0\" and \"\" become nil; a real one is kept")
    func webOrderLineItem() {
        let contents = response(inApp: [entry("1", webOrder: "0"), entry("2", webOrder: ""), entry("3", webOrder: "77")])
            .contents(environment: .production)
        #expect(contents.entries.map(\.webOrderLineItemId) == [nil, nil, "77"])
    }

    @Test("quantity: absent or below 1 counts as 1")
    func quantity() {
        let contents = response(inApp: [entry("1", quantity: nil), entry("2", quantity: 0), entry("3", quantity: 3)])
            .contents(environment: .production)
        #expect(contents.entries.map(\.quantity) == [1, 1, 3])
    }

    @Test("in_app then latest_receipt_info, unmerged, with the environment given")
    func bothLists() {
        let contents = response(inApp: [entry("1"), entry("2")], latest: [entry("2"), entry("3")])
            .contents(environment: .sandbox)
        #expect(contents.entries.map(\.transactionId) == ["1", "2", "2", "3"])
        #expect(contents.environment == .sandbox)
        #expect(contents.bundleId == "com.example.app")
    }

    @Test("no receipt object: latest_receipt_info alone, no bundle id")
    func noReceipt() {
        let contents = VerifyReceiptResponse(status: 0, latestReceiptInfo: [entry("9")])
            .contents(environment: .production)
        #expect(contents.bundleId == nil)
        #expect(contents.entries.map(\.transactionId) == ["9"])
    }

    @Test("dates and cancellation carried over")
    func datesAndCancellation() throws {
        var cancelled = entry("1")
        cancelled.expiresDateMs = 1_594_755_700_000
        cancelled.cancellationDateMs = 1_594_755_500_000
        cancelled.cancellationReason = "1"
        let purchase = try #require(response(inApp: [cancelled]).contents(environment: .production).entries.first)
        #expect(purchase.purchaseDateMs == 1_594_755_400_000)
        #expect(purchase.expiresDateMs == 1_594_755_700_000)
        #expect(purchase.cancellationDateMs == 1_594_755_500_000)
        #expect(purchase.cancellationReason == "1")
        #expect(purchase.isCancelled)
    }
}
