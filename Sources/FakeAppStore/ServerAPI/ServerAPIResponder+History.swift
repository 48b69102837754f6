import AppStoreModel

/// Get Transaction History v2 as Apple answers it: the customer's transactions for the app, filtered by `productId`
/// (repeatable), `startDate` and `endDate` (on the purchase date), ordered by `sort` on each transaction's most recent
/// modification, in pages of `pageSize`. A `revision` continues the reading it came from and only with the query it
/// was made for; filters the fake does not implement are refused rather than ignored.
extension ServerAPIResponder {
    /// The query, checked as Apple checks it.
    struct HistoryFilter {
        var descending = false
        var productIds: Set<String> = []
        var startDate: Int64?
        var endDate: Int64?
        var revision: String?

        /// What a revision is bound to: the query without the revision, in a fixed form.
        var fingerprint: String {
            var text = descending ? "DESCENDING" : "ASCENDING"
            text += "|" + productIds.sorted().joined(separator: ",")
            text += "|" + (startDate.map(String.init) ?? "") + "|" + (endDate.map(String.init) ?? "")
            // FNV-1a, 64 bits: short, stable across runs (Swift's hashValue is seeded per process).
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in text.utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            return String(hash, radix: 16)
        }
    }

    func history(
        _ id: String, environment: String, bundleId: String, parameters: [(name: String, value: String)]
    ) -> (FakeHTTPAnswer, String) {
        guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
        let filter: HistoryFilter
        switch Self.historyFilter(parameters) {
        case .success(let parsed): filter = parsed
        case .failure(let refusal): return Self.failed(refusal.code)
        }
        guard let entries = api.store.history(of: id, environment: environment, bundleId: bundleId) else {
            return Self.failed(.transactionIdNotFound)
        }
        var ordered = entries.filter { entry in
            let purchaseDate = entry.signed.purchase.purchaseDate ?? entry.modifiedDate
            return (filter.productIds.isEmpty || filter.productIds.contains(entry.signed.purchase.productId))
                && filter.startDate.map { purchaseDate >= $0 } ?? true
                && filter.endDate.map { purchaseDate < $0 } ?? true
        }
        ordered.sort { ($0.modifiedDate, $0.position) < ($1.modifiedDate, $1.position) }
        if filter.descending { ordered.reverse() }

        var start = 0
        if let revision = filter.revision {
            guard let after = Self.position(revision, fingerprint: filter.fingerprint) else {
                return Self.failed(.invalidRequestRevision)
            }
            // The first entry past the revision's one in this order: changes since (a refund moves a transaction to
            // the newest end) neither repeat nor skip what was not yet read, as far as the order allows.
            start = ordered.firstIndex { entry in
                let key = (entry.modifiedDate, entry.position)
                return filter.descending ? key < after : key > after
            } ?? ordered.count
        }
        let page = ordered[start...].prefix(api.pageSize)
        let last = page.last.map { ($0.modifiedDate, $0.position) } ?? (0, -1)
        return Self.ok(
            TransactionHistoryResponse(
                revision: "fake-revision.\(filter.fingerprint).\(last.0).\(last.1)",
                hasMore: start + page.count < ordered.count, bundleId: bundleId,
                appAppleId: FakePayloads.appAppleId(bundleId: bundleId, environment: environment),
                environment: environment, signedTransactions: page.map(\.signed.signedTransaction)
            )
        )
    }

    struct HistoryRefusal: Error {
        var code: ServerAPIErrorCode
    }

    static func historyFilter(_ parameters: [(name: String, value: String)]) -> Result<HistoryFilter, HistoryRefusal> {
        var filter = HistoryFilter()
        for (name, value) in parameters {
            switch name {
            case "sort":
                guard let order = TransactionHistoryQuery.Order(rawValue: value) else {
                    return .failure(HistoryRefusal(code: .invalidSort))
                }
                filter.descending = order == .descending
            case "productId":
                guard !value.isEmpty else { return .failure(HistoryRefusal(code: .invalidProductId)) }
                filter.productIds.insert(value)
            case "startDate":
                guard isDigits(value), let date = Int64(value) else {
                    return .failure(HistoryRefusal(code: .invalidStartDate))
                }
                filter.startDate = date
            case "endDate":
                guard isDigits(value), let date = Int64(value) else {
                    return .failure(HistoryRefusal(code: .invalidEndDate))
                }
                filter.endDate = date
            case "revision":
                filter.revision = value
            default:
                // productType, subscriptionGroupIdentifier, inAppOwnershipType, revoked: Apple's, not the fake's.
                return .failure(HistoryRefusal(code: .generalBadRequest))
            }
        }
        if let startDate = filter.startDate, let endDate = filter.endDate, startDate >= endDate {
            return .failure(HistoryRefusal(code: .startDateAfterEndDate))
        }
        return .success(filter)
    }

    /// The (modification date, position) a revision continues after; nil when it is not one of this fake's, or was
    /// made for another query.
    static func position(_ revision: String, fingerprint: String) -> (Int64, Int)? {
        let parts = revision.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "fake-revision", parts[1] == fingerprint,
            let modified = Int64(parts[2]), let position = Int(parts[3])
        else { return nil }
        return (modified, position)
    }
}
