import AppStoreSignedData
import ReceiptQueue
import ReceiptRules
import Testing
import Workers

/// A Server API answer (Get Transaction History) is judged as one app's only when every transaction in it names that
/// app: one of another bundle rejects the set, wherever it stands in the list.
@Suite("Server API history: every transaction's bundle id")
struct HistoryBundleTests {
    static func transaction(_ id: String, bundle: String, product: String = Sample.product) -> SignedTransaction {
        var transaction = SignedTransaction()
        transaction.transactionId = id
        transaction.originalTransactionId = id
        transaction.bundleId = bundle
        transaction.productId = product
        transaction.purchaseDateMs = Sample.orderTimeMs + Sample.minute
        transaction.environment = "Production"
        return transaction
    }

    static func outcome(_ history: [SignedTransaction]) -> JobOutcome {
        Sample.decider.outcome(for: Sample.job(), verified: .success(history), environment: .production, random: 0)
    }

    @Test("the second transaction of another app: bundle_mismatch, nothing credited")
    func secondOfAnotherApp() {
        let history = [
            Self.transaction("1001", bundle: Sample.bundleId, product: "com.example.other.product"),
            Self.transaction("1002", bundle: "com.attacker.app"),
        ]
        let outcome = Self.outcome(history)
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason == .bundleMismatch)
        #expect(outcome.candidates.isEmpty)
    }

    @Test("all of the order's app: credited")
    func allOfTheApp() {
        let history = [
            Self.transaction("1001", bundle: Sample.bundleId, product: "com.example.other.product"),
            Self.transaction("1002", bundle: Sample.bundleId),
        ]
        let outcome = Self.outcome(history)
        #expect(outcome.kind == .verified)
        #expect(outcome.candidates.map(\.transactionId) == ["1002"])
    }
}
