import ReceiptRules

/// Builders for rule inputs: a production receipt of one configured app, an order for a consumable made at
/// `Sample.orderTimeMs`, and purchases with only the fields a test cares about.
enum Sample {
    static let bundleId = "com.example.app"
    static let otherBundleId = "com.example.other"
    static let consumable = "com.example.gems"
    static let subscription = "com.example.monthly"
    static let userId = "user-1"
    /// 2023-11-14T22:13:20Z.
    static let orderTimeMs: Int64 = 1_700_000_000_000
    static let minute: Int64 = 60_000
    static let fiveMinutes: Int64 = 5 * minute

    static func configuration(
        bundleIds: Set<String> = [bundleId],
        sandboxPolicy: SandboxPolicy = .accept,
        noPurchasesAttempts: Int = 3
    ) -> RulesConfiguration {
        RulesConfiguration(bundleIds: bundleIds, sandboxPolicy: sandboxPolicy, noPurchasesAttempts: noPurchasesAttempts)
    }

    static func order(
        product: String = consumable,
        clientTransactionId: String? = nil,
        userId: String = userId,
        bundleId: String = bundleId,
        createdAtMs: Int64? = orderTimeMs,
        jobCreatedAtMs: Int64 = orderTimeMs + minute,
        attempt: Int = 1
    ) -> OrderContext {
        OrderContext(
            jobId: 7,
            orderId: "order-7",
            userId: userId,
            productId: product,
            clientTransactionId: clientTransactionId,
            bundleId: bundleId,
            orderCreatedAtMs: createdAtMs,
            jobCreatedAtMs: jobCreatedAtMs,
            attempt: attempt
        )
    }

    static func receipt(
        _ entries: [Purchase],
        environment: PurchaseEnvironment = .production,
        bundleId: String? = bundleId
    ) -> ReceiptContents {
        ReceiptContents(environment: environment, bundleId: bundleId, entries: entries)
    }

    static func purchase(
        _ transactionId: String,
        product: String = consumable,
        at purchaseDateMs: Int64? = orderTimeMs + minute,
        expires expiresDateMs: Int64? = nil,
        cancelled cancellationDateMs: Int64? = nil,
        reason: String? = nil,
        original: String? = nil,
        webOrderLineItemId: String? = nil,
        quantity: Int = 1
    ) -> Purchase {
        Purchase(
            transactionId: transactionId,
            originalTransactionId: original,
            webOrderLineItemId: webOrderLineItemId,
            productId: product,
            quantity: quantity,
            purchaseDateMs: purchaseDateMs,
            expiresDateMs: expiresDateMs,
            cancellationDateMs: cancellationDateMs,
            cancellationReason: reason
        )
    }
}

func decide(
    _ receipt: ReceiptContents,
    _ order: OrderContext = Sample.order(),
    _ configuration: RulesConfiguration = Sample.configuration()
) -> Verdict {
    VerdictRules.decide(receipt: receipt, order: order, configuration: configuration)
}

extension Verdict.Decision {
    var rejection: RejectionReason? {
        if case .reject(let reason, _) = self { reason } else { nil }
    }

    var candidateIds: [String]? {
        if case .credit(let candidates) = self { candidates.map(\.transactionId) } else { nil }
    }

    var isRetry: Bool {
        if case .retry = self { true } else { false }
    }

    var detail: String? {
        switch self {
        case .credit: nil
        case .reject(_, let detail), .retry(let detail): detail
        }
    }
}

/// Every ordering of `items` (n! of them: keep n small).
func permutations<T>(_ items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index -> [[T]] in
        var rest = items
        let first = rest.remove(at: index)
        return permutations(rest).map { [first] + $0 }
    }
}

/// A seeded generator (SplitMix64), so shuffled inputs are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
