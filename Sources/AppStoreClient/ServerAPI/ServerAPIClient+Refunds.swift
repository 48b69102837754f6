import AppStoreModel

extension ServerAPIClient {
    /// Get Refund History v2 (`GET /inApps/v2/refund/lookup/{transactionId}`): every refunded transaction of the
    /// customer who owns `transactionId`, for `bundleId`, following `revision` while Apple has more (20 a page), up to
    /// `maxHistoryPages` pages. Paced as its own operation (Apple's limit: 10 a second in production, 1 in the
    /// sandbox). The signed transactions come back as JWS: verify each with `SignedDataVerifier` before trusting it.
    ///
    /// - Parameters:
    ///   - revision: where to go on from (a previous result's `nextRevision`); nil starts at the first page.
    ///   - environment: nil asks production, then the sandbox once when production does not know the id; a revision
    ///     belongs to one environment, so pass it with one.
    public func refundHistory(
        transactionId: String,
        bundleId: String,
        revision: String? = nil,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<RefundHistory>, [AppStoreCall]) -> Void
    ) {
        let request: ServerAPIRequest
        do {
            request = try .refundHistory(transactionId: transactionId, revision: revision)
        } catch {
            return refuse(error, completion)
        }
        acrossEnvironments(environment, completion: completion) { [self] environment, done in
            refundPages(
                request, bundleId: bundleId, environment: environment,
                read: RefundHistory(signedTransactions: [], pages: 0, nextRevision: nil), calls: [], done: done
            )
        }
    }

    /// Blocking form of `refundHistory(transactionId:bundleId:revision:environment:completion:)`.
    public func refundHistory(
        transactionId: String, bundleId: String, revision: String? = nil, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<RefundHistory>, [AppStoreCall]) {
        blocking {
            refundHistory(
                transactionId: transactionId, bundleId: bundleId, revision: revision, environment: environment,
                completion: $0
            )
        }
    }

    /// Reads one refund page and the ones after it. A failure past the first page fails the whole reading (never a
    /// partial list taken for the whole): retryable, since the id is known.
    private func refundPages(
        _ request: ServerAPIRequest,
        bundleId: String,
        environment: AppStoreEndpoint,
        read: RefundHistory,
        calls: [AppStoreCall],
        done: @escaping @Sendable (Attempt<RefundHistory>, [AppStoreCall]) -> Void
    ) {
        exchange(
            request, bundleId: bundleId, environment: environment,
            read: { Self.decode(RefundHistoryResponse.self, from: $0, environment: environment) }
        ) { [self] page, call in
            let calls = calls + [call]
            switch page {
            case .failed(let errorClass, var failure):
                guard read.pages > 0 else { return done(.failed(errorClass, failure), calls) }
                failure.message = "refund history page \(read.pages + 1): \(failure.message)"
                done(.failed(errorClass.isNotFound ? .retryable : errorClass, failure), calls)
            case .value(let page):
                var history = read
                history.signedTransactions += page.signedTransactions ?? []
                history.pages += 1
                history.lastRevision = page.revision
                guard page.hasMore == true else { return done(.value(history), calls) }
                guard let revision = page.revision, !revision.isEmpty else {
                    let broken: Attempt<RefundHistory> = Self.unreadable(
                        "a refund history page with hasMore and no revision", environment: environment
                    )
                    return done(broken, calls)
                }
                guard history.pages < configuration.maxHistoryPages else {
                    history.nextRevision = revision
                    return done(.value(history), calls)
                }
                var next = request
                next.query = [("revision", revision)]
                refundPages(next, bundleId: bundleId, environment: environment, read: history, calls: calls, done: done)
            }
        }
    }
}

/// A customer's refunded transactions for one app, from Get Refund History v2.
public struct RefundHistory: Sendable, Hashable {
    /// Every page's `signedTransactions`, in Apple's order (oldest revocation first; JWS: verify each before trusting
    /// it).
    public var signedTransactions: [String]
    /// Pages read.
    public var pages: Int
    /// Set when `maxHistoryPages` stopped the reading while Apple had more: pass it as `revision` to go on.
    public var nextRevision: String?
    /// The last page's revision: kept, it asks later for the refunds granted since (Apple's advice).
    public var lastRevision: String?

    public init(signedTransactions: [String], pages: Int, nextRevision: String?, lastRevision: String? = nil) {
        self.signedTransactions = signedTransactions
        self.pages = pages
        self.nextRevision = nextRevision
        self.lastRevision = lastRevision
    }

    /// Whether every page was read.
    public var isComplete: Bool { nextRevision == nil }
}
