import AppStoreModel

extension ServerAPIClient {
    /// Get Transaction Info: the signed transaction (JWS) for `transactionId` (any transaction id of the app's
    /// customers, original ones included), asked for `bundleId`.
    ///
    /// - Parameter environment: nil asks production, then the sandbox once when production does not know the id;
    ///   an environment asks that one only (a signed transaction already names its environment).
    public func transactionInfo(
        transactionId: String,
        bundleId: String,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<String>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .transactionInfo(transactionId: transactionId) },
            bundleId: bundleId, environment: environment, read: Self.signedTransactionInfo(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `transactionInfo(transactionId:bundleId:environment:completion:)`.
    public func transactionInfo(
        transactionId: String, bundleId: String, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<String>, [AppStoreCall]) {
        blocking {
            transactionInfo(transactionId: transactionId, bundleId: bundleId, environment: environment, completion: $0)
        }
    }

    /// Get Transaction History v2: the signed transactions of the customer who owns `transactionId`, for `bundleId`,
    /// as `query` filters and orders them, following `revision` while Apple has more, up to `maxHistoryPages` pages.
    /// Every page is asked with the same query (Apple's revision continues the reading it came from).
    ///
    /// - Parameters:
    ///   - query: Apple's filters and sort order; the default asks for everything, oldest first.
    ///   - revision: where to go on from (a previous result's `nextRevision`, with the same `query`); nil starts at
    ///     the first page.
    ///   - environment: as for `transactionInfo`; a revision belongs to one environment, so pass it with one.
    ///   - until: given each page's signed transactions (not yet verified: use it to stop, never to decide); true
    ///     ends the reading after that page, with `satisfied` set and `nextRevision` kept if Apple had more.
    public func transactionHistory(
        transactionId: String,
        bundleId: String,
        query: TransactionHistoryQuery = TransactionHistoryQuery(),
        revision: String? = nil,
        environment: AppStoreEndpoint? = nil,
        until: (@Sendable ([String]) -> Bool)? = nil,
        completion: @escaping @Sendable (ServerAPIResult<TransactionHistory>, [AppStoreCall]) -> Void
    ) {
        let request: ServerAPIRequest
        do {
            request = try .transactionHistory(transactionId: transactionId, query: query, revision: revision)
        } catch {
            return refuse(error, completion)
        }
        acrossEnvironments(environment, completion: completion) { [self] environment, done in
            historyPages(
                request, bundleId: bundleId, environment: environment, until: until,
                read: TransactionHistory(signedTransactions: [], pages: 0, nextRevision: nil), calls: [], done: done
            )
        }
    }

    /// Blocking form of `transactionHistory(transactionId:bundleId:query:revision:environment:until:completion:)`.
    public func transactionHistory(
        transactionId: String, bundleId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(),
        revision: String? = nil, environment: AppStoreEndpoint? = nil, until: (@Sendable ([String]) -> Bool)? = nil
    ) -> (ServerAPIResult<TransactionHistory>, [AppStoreCall]) {
        blocking {
            transactionHistory(
                transactionId: transactionId, bundleId: bundleId, query: query, revision: revision,
                environment: environment, until: until, completion: $0
            )
        }
    }

    /// Reads one history page and the ones after it.
    private func historyPages(
        _ request: ServerAPIRequest,
        bundleId: String,
        environment: AppStoreEndpoint,
        until: (@Sendable ([String]) -> Bool)?,
        read: TransactionHistory,
        calls: [AppStoreCall],
        done: @escaping @Sendable (Attempt<TransactionHistory>, [AppStoreCall]) -> Void
    ) {
        exchange(
            request, bundleId: bundleId, environment: environment,
            read: { Self.decode(TransactionHistoryResponse.self, from: $0, environment: environment) }
        ) { [self] page, call in
            let calls = calls + [call]
            switch page {
            case .failed(let errorClass, var failure):
                guard read.pages > 0 else { return done(.failed(errorClass, failure), calls) }
                // Past the first page the id is known: whatever went wrong, the next attempt starts again.
                failure.message = "history page \(read.pages + 1): \(failure.message)"
                done(.failed(errorClass.isNotFound ? .retryable : errorClass, failure), calls)
            case .value(let page):
                var history = read
                let signed = page.signedTransactions ?? []
                history.signedTransactions += signed
                history.pages += 1
                history.satisfied = until?(signed) ?? false
                guard page.hasMore == true else { return done(.value(history), calls) }
                guard let revision = page.revision, !revision.isEmpty else {
                    let broken: Attempt<TransactionHistory> = Self.unreadable(
                        "a history page with hasMore and no revision", environment: environment
                    )
                    return done(broken, calls)
                }
                guard !history.satisfied, history.pages < configuration.maxHistoryPages else {
                    history.nextRevision = revision
                    return done(.value(history), calls)
                }
                var next = request
                next.query = request.query.filter { $0.name != "revision" } + [("revision", revision)]
                historyPages(
                    next, bundleId: bundleId, environment: environment, until: until, read: history, calls: calls,
                    done: done
                )
            }
        }
    }

    /// Look Up Order ID: the signed transactions of the order `orderId` (from the customer's e-mailed receipt), for
    /// `bundleId`. Status 1 (an invalid order id) in every environment asked is `.notFound`.
    public func lookUpOrder(
        orderId: String,
        bundleId: String,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<[String]>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .orderLookup(orderId: orderId) },
            bundleId: bundleId, environment: environment, read: Self.orderTransactions(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `lookUpOrder(orderId:bundleId:environment:completion:)`.
    public func lookUpOrder(
        orderId: String, bundleId: String, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<[String]>, [AppStoreCall]) {
        blocking { lookUpOrder(orderId: orderId, bundleId: bundleId, environment: environment, completion: $0) }
    }

    static func orderTransactions(_ body: [UInt8], environment: AppStoreEndpoint) -> Attempt<[String]> {
        decode(OrderLookupResponse.self, from: body, environment: environment).flatMap { lookup in
            switch lookup.status {
            case OrderLookupResponse.valid?:
                return .value(lookup.signedTransactions ?? [])
            case OrderLookupResponse.invalid?:
                let failure = AppStoreFailure(
                    cause: .appleStatus, message: "order lookup status 1: Apple does not know the order id",
                    endpoint: environment, appleStatus: OrderLookupResponse.invalid, httpStatus: 200
                )
                return .failed(.notFound, failure)
            default:
                let status = lookup.status.map(String.init) ?? "null"
                return unreadable("an order lookup answer with status \(status)", environment: environment)
            }
        }
    }

    /// Get Notification History: one page of the notifications Apple sent (or tried to send) in `environment`.
    /// Pass the page's `paginationToken`, with the same `request`, for the next one.
    public func notificationHistory(
        _ request: NotificationHistoryRequest,
        paginationToken: String? = nil,
        bundleId: String,
        environment: AppStoreEndpoint,
        completion: @escaping @Sendable (ServerAPIResult<NotificationHistoryPage>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .notificationHistory(request, paginationToken: paginationToken) },
            bundleId: bundleId, environment: environment, read: Self.notificationPage(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `notificationHistory(_:paginationToken:bundleId:environment:completion:)`.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil, bundleId: String,
        environment: AppStoreEndpoint
    ) -> (ServerAPIResult<NotificationHistoryPage>, [AppStoreCall]) {
        blocking {
            notificationHistory(
                request, paginationToken: paginationToken, bundleId: bundleId, environment: environment, completion: $0
            )
        }
    }
}

extension ServerAPIClient {
    /// One request in each environment asked: `build` makes it (an id it refuses completes as `.rejected`, unsent),
    /// `read` takes Apple's answer apart.
    func lookUp<Value: Sendable>(
        _ build: () throws(AppStoreFailure) -> ServerAPIRequest,
        bundleId: String,
        environment: AppStoreEndpoint?,
        read: @escaping @Sendable ([UInt8], AppStoreEndpoint) -> Attempt<Value>,
        completion: @escaping @Sendable (ServerAPIResult<Value>, [AppStoreCall]) -> Void
    ) {
        let request: ServerAPIRequest
        do {
            request = try build()
        } catch {
            return refuse(error, completion)
        }
        acrossEnvironments(environment, completion: completion) { [self] environment, done in
            exchange(
                request, bundleId: bundleId, environment: environment, read: { read($0, environment) },
                completion: { answer, call in done(answer, [call]) }
            )
        }
    }

    static func signedTransactionInfo(_ body: [UInt8], environment: AppStoreEndpoint) -> Attempt<String> {
        decode(TransactionInfoResponse.self, from: body, environment: environment).flatMap { info in
            guard let signed = info.signedTransactionInfo, !signed.isEmpty else {
                return unreadable("an answer without signedTransactionInfo", environment: environment)
            }
            return .value(signed)
        }
    }

    static func notificationPage(_ body: [UInt8], environment: AppStoreEndpoint) -> Attempt<NotificationHistoryPage> {
        decode(NotificationHistoryResponse.self, from: body, environment: environment).map { page in
            NotificationHistoryPage(
                notifications: page.notificationHistory ?? [], hasMore: page.hasMore ?? false,
                paginationToken: page.paginationToken
            )
        }
    }
}

extension ServerAPIClient.Attempt {
    func map<Other: Sendable>(_ transform: (Value) -> Other) -> ServerAPIClient.Attempt<Other> {
        flatMap { .value(transform($0)) }
    }
}
