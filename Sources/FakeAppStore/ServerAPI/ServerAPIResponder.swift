import AppStoreModel
import Foundation

/// Answers the App Store Server API the way Apple does, for the purchases in the fake's `PurchaseStore`:
/// production at `/inApps/...`, the sandbox at `/sandbox/inApps/...` (as verifyReceipt's two hosts are told apart).
/// Every request needs a good token (else 401); then Apple's rate limit when one is set (429), an injected fault,
/// or the answer. No I/O but one: Request a Test Notification starts sending its TEST notification (the sender's
/// thread does it); the clocks arrive as arguments, randomness as a generator.
struct ServerAPIResponder: Sendable {
    let api: ServerAPIState

    /// One request as the responder needs it.
    struct Request {
        var method: String
        /// The request target: path and query.
        var uri: String
        var authorization: String?
        var body: [UInt8]
        /// Wall clock, milliseconds since 1970 (tokens, Retry-After, notification dates).
        var nowMilliseconds: Int64
        /// Monotonic seconds since the server started (rate limit, arrivals).
        var uptime: Double
    }

    /// The routes, by path after the environment's prefix.
    private enum Route {
        case transactionInfo(String)
        case history(String)
        case orderLookup(String)
        case notificationHistory
        case consumption(String)
        case subscriptionStatuses(String)
        case setAppAccountToken(String)
        case extendRenewalDate(String)
        case massExtendRenewalDate
        case massExtensionStatus(productId: String, requestIdentifier: String)
        case refundHistory(String)
        case requestTestNotification
        case testNotificationStatus(String)
        case appTransactionInfo(String)

        var operation: String {
            switch self {
            case .transactionInfo: "transaction_info"
            case .history: "transaction_history"
            case .orderLookup: "order_lookup"
            case .notificationHistory: "notification_history"
            case .consumption: "send_consumption"
            case .subscriptionStatuses: "subscription_statuses"
            case .setAppAccountToken: "set_app_account_token"
            case .extendRenewalDate: "extend_renewal_date"
            case .massExtendRenewalDate: "mass_extend_renewal_date"
            case .massExtensionStatus: "mass_extension_status"
            case .refundHistory: "refund_history"
            case .requestTestNotification: "request_test_notification"
            case .testNotificationStatus: "test_notification_status"
            case .appTransactionInfo: "app_transaction_info"
            }
        }
    }

    /// The answer, or nil when the path is not the App Store Server API's.
    func reply<Generator: RandomNumberGenerator>(
        to request: Request, using generator: inout Generator
    ) -> FakeHTTPAnswer? {
        let (path, query) = Self.split(request.uri)
        let environment: String
        let rest: Substring
        if path.hasPrefix("/sandbox/inApps/") {
            (environment, rest) = ("Sandbox", path.dropFirst("/sandbox".count))
        } else if path.hasPrefix("/inApps/") {
            (environment, rest) = ("Production", Substring(path))
        } else {
            return nil
        }
        guard let route = Self.route(method: request.method, path: rest) else {
            return FakeHTTPAnswer(status: 404)
        }
        let (answer, label) = answer(route, request, environment: environment, query: query, using: &generator)
        api.record(environment: environment, operation: route.operation, answer: label, arrival: request.uptime)
        return answer
    }

    private func answer<Generator: RandomNumberGenerator>(
        _ route: Route, _ request: Request, environment: String, query: [String: String],
        using generator: inout Generator
    ) -> (FakeHTTPAnswer, String) {
        let bundleId: String
        switch api.authorization.check(authorization: request.authorization, now: request.nowMilliseconds / 1000) {
        case .failure(let refusal):
            return (FakeHTTPAnswer(status: 401, headers: [("X-Fake-AppStore-Reason", refusal.reason)]), "401")
        case .success(let bid):
            bundleId = bid
        }
        if let wait = api.overLimit(bundleId: bundleId, operation: route.operation, now: request.uptime) {
            return (Self.rateLimited(nowMilliseconds: request.nowMilliseconds, wait: Int(wait * 1000)), "429")
        }
        let fault = api.nextFault(using: &generator)
        switch fault {
        case .rateLimited(let milliseconds)?:
            return (Self.rateLimited(nowMilliseconds: request.nowMilliseconds, wait: milliseconds), "429")
        case .internalRetryable?:
            return (Self.error(.generalInternalRetryable), "5000001")
        case .html503?:
            let page = Array(FaultInjection.serviceUnavailablePage.utf8)
            let html = [(name: "Content-Type", value: "text/html; charset=utf-8")]
            return (FakeHTTPAnswer(status: 503, headers: html, body: page), "html503")
        case .truncated?, .slow?, nil:
            break
        }
        var (answer, label) = normal(route, request, environment: environment, bundleId: bundleId, query: query)
        if case .truncated? = fault {
            answer.truncated = true
            label = "truncated"
        }
        if case .slow(let milliseconds)? = fault {
            answer.extraDelayMilliseconds = milliseconds
        }
        return (answer, label)
    }

    /// Apple's answer without faults.
    private func normal(
        _ route: Route, _ request: Request, environment: String, bundleId: String, query: [String: String]
    ) -> (FakeHTTPAnswer, String) {
        switch route {
        case .consumption(let id):
            guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
            // Send Consumption Information v2: kept as received (tests, the admin port); 202 and no body, as Apple.
            guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
                return Self.failed(.generalBadRequest)
            }
            let known = api.store.transaction(id, environment: environment, bundleId: bundleId)
            if let refused = Self.refusedConsumption(
                object, autoRenewable: known.map { $0.purchase.type == PurchaseStore.autoRenewable }
            ) {
                return Self.failed(refused)
            }
            api.recordConsumption(
                FakeConsumptionAnswer(
                    environment: environment, bundleId: bundleId, transactionId: id,
                    body: String(decoding: request.body, as: UTF8.self)
                )
            )
            return (FakeHTTPAnswer(status: 202), "202")
        case .transactionInfo(let id):
            guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
            guard let signed = api.store.transaction(id, environment: environment, bundleId: bundleId) else {
                return Self.failed(.transactionIdNotFound)
            }
            return Self.ok(TransactionInfoResponse(signedTransactionInfo: signed.signedTransaction))
        case .history(let id):
            return history(id, environment: environment, bundleId: bundleId, parameters: Self.parameters(request.uri))
        case .refundHistory(let id):
            // Get Refund History v2: the customer's refunded transactions, oldest revocation first, paged as Apple
            // pages them (hasMore and a revision for the next page).
            guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
            guard let refunded = api.store.refunds(of: id, environment: environment, bundleId: bundleId) else {
                return Self.failed(.transactionIdNotFound)
            }
            guard let offset = Self.offset(query["revision"], prefix: "fake-refund-revision-") else {
                return Self.failed(.invalidRequestRevision)
            }
            let page = refunded.dropFirst(offset).prefix(api.pageSize)
            let next = offset + page.count
            return Self.ok(
                RefundHistoryResponse(
                    revision: "fake-refund-revision-\(next)", hasMore: next < refunded.count,
                    signedTransactions: page.map(\.signedTransaction)
                )
            )
        case .orderLookup(let orderId):
            let purchases = api.store.order(
                orderId, environment: environment, bundleId: api.orderLookupAcrossApps ? nil : bundleId
            )
            guard !purchases.isEmpty else { return Self.ok(OrderLookupResponse(status: OrderLookupResponse.invalid)) }
            let signed = purchases.map(\.signedTransaction)
            return Self.ok(OrderLookupResponse(status: OrderLookupResponse.valid, signedTransactions: signed))
        case .notificationHistory:
            return notificationHistory(request, environment: environment, bundleId: bundleId, query: query)
        case .setAppAccountToken(let id):
            return setAppAccountToken(id, request, environment: environment, bundleId: bundleId)
        case .requestTestNotification:
            return requestTestNotification(request, environment: environment, bundleId: bundleId)
        case .testNotificationStatus(let token):
            guard let uuid = api.testNotificationUUID(token: token), let sent = api.store.notification(uuid: uuid),
                sent.environment == environment, sent.bundleId == bundleId, !sent.sendAttempts.isEmpty
            else {
                return Self.failed(.testNotificationNotFound)
            }
            return Self.ok(
                CheckTestNotificationResponse(
                    signedPayload: sent.signedPayload,
                    sendAttempts: sent.sendAttempts.map { .init(attemptDate: $0.attemptDate, sendAttemptResult: $0.result) }
                )
            )
        case .appTransactionInfo(let id):
            guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
            switch api.store.appTransaction(for: id, environment: environment, bundleId: bundleId) {
            case nil: return Self.failed(.transactionIdNotFound)
            case .some(nil): return Self.failed(.appTransactionDoesNotExist)
            case .some(let app?): return Self.ok(AppTransactionInfoResponse(signedAppTransactionInfo: app.signed))
            }
        case .extendRenewalDate(let id):
            return extendRenewalDate(id, request, environment: environment, bundleId: bundleId)
        case .massExtendRenewalDate:
            return massExtendRenewalDate(request, environment: environment, bundleId: bundleId)
        case .massExtensionStatus(let productId, let requestIdentifier):
            guard
                let status = api.store.massExtensionStatus(
                    productId: productId, requestIdentifier: requestIdentifier, environment: environment,
                    bundleId: bundleId
                )
            else { return Self.failed(.invalidRequestIdentifier) }
            return Self.ok(status)
        case .subscriptionStatuses(let id):
            guard Self.isDigits(id) else { return Self.failed(.invalidTransactionId) }
            let groups: [SubscriptionStatusesResponse.Group]?
            do {
                groups = try api.store.subscriptionStatuses(
                    of: id, environment: environment, bundleId: bundleId, signedDate: request.nowMilliseconds
                )
            } catch {
                return (FakeHTTPAnswer(status: 500), "500")
            }
            guard let data = groups else { return Self.failed(.transactionIdNotFound) }
            return Self.ok(
                SubscriptionStatusesResponse(
                    environment: environment, bundleId: bundleId,
                    appAppleId: FakePayloads.appAppleId(bundleId: bundleId, environment: environment), data: data
                )
            )
        }
    }

    /// What Apple refuses in a ConsumptionRequest (its documentation of consumptionPercentage and refundPreference):
    /// customerConsented other than true; a consumptionPercentage out of 0...100000, or other than 0 when
    /// deliveryStatus is not DELIVERED, or given for an auto-renewable subscription; GRANT_PRORATED without a
    /// consumptionPercentage above 0 and below 100000, for a product that is not an auto-renewable subscription
    /// (`autoRenewable` nil: a transaction the fake does not hold, taken as not one).
    static func refusedConsumption(_ body: [String: Any], autoRenewable: Bool?) -> ServerAPIErrorCode? {
        guard body["customerConsented"] as? Bool == true else { return .invalidCustomerConsented }
        let percentage = body["consumptionPercentage"] as? Int
        if body["consumptionPercentage"] != nil {
            guard let percentage, (0...100_000).contains(percentage), autoRenewable != true else {
                return .generalBadRequest
            }
            if body["deliveryStatus"] as? String != "DELIVERED", percentage != 0 { return .generalBadRequest }
        }
        if body["refundPreference"] as? String == "GRANT_PRORATED", autoRenewable != true,
            !(1...99_999).contains(percentage ?? 0)
        {
            return .generalBadRequest
        }
        return nil
    }

    /// Set App Account Token, with Apple's errors: an id that is not digits (4000008), a body without a string
    /// appAccountToken (4000000) or with one that is not a UUID (4000183), an unknown id (4040010), a renewal's id
    /// (4000187). 200 with no body once the chain carries the token.
    private func setAppAccountToken(
        _ id: String, _ request: Request, environment: String, bundleId: String
    ) -> (FakeHTTPAnswer, String) {
        guard Self.isDigits(id) else { return Self.failed(.invalidOriginalTransactionId) }
        let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
        guard let text = object?["appAccountToken"] as? String else { return Self.failed(.generalBadRequest) }
        guard let token = UUID(uuidString: text) else { return Self.failed(.invalidAppAccountTokenUUID) }
        let change: PurchaseStore.AccountTokenChange
        do {
            change = try api.store.setAppAccountToken(
                originalTransactionId: id, token: token, environment: environment, bundleId: bundleId,
                now: Date(timeIntervalSince1970: Double(request.nowMilliseconds) / 1000)
            )
        } catch {
            return (FakeHTTPAnswer(status: 500), "500")
        }
        switch change {
        case .set: return (FakeHTTPAnswer(status: 200), "200")
        case .notFound: return Self.failed(.transactionIdNotFound)
        case .notOriginal: return Self.failed(.transactionIdNotOriginalTransactionId)
        }
    }

    /// Extend a Subscription Renewal Date, with Apple's errors: an id that is not digits (4000008), days outside
    /// 1-90 (4000009), a reason code outside 0-3 (4000010), no request identifier (4000011), an unknown chain
    /// (4040010), a subscription that is not active (4030004).
    private func extendRenewalDate(
        _ id: String, _ request: Request, environment: String, bundleId: String
    ) -> (FakeHTTPAnswer, String) {
        guard Self.isDigits(id) else { return Self.failed(.invalidOriginalTransactionId) }
        let (body, refusal) = Self.extensionRequest(request.body)
        guard let (_, days, reason, requestIdentifier) = body else { return Self.failed(refusal) }
        let change: PurchaseStore.RenewalExtensionChange
        do {
            change = try api.store.extendRenewalDate(
                originalTransactionId: id,
                RenewalExtension.Request(extendByDays: days, extendReasonCode: reason, requestIdentifier: requestIdentifier),
                environment: environment, bundleId: bundleId,
                now: Date(timeIntervalSince1970: Double(request.nowMilliseconds) / 1000)
            )
        } catch {
            return (FakeHTTPAnswer(status: 500), "500")
        }
        switch change {
        case .extended(let response): return Self.ok(response)
        case .notFound: return Self.failed(.transactionIdNotFound)
        case .notOriginal: return Self.failed(.invalidOriginalTransactionId)
        case .notEligible: return Self.failed(.subscriptionExtensionIneligible)
        }
    }

    /// The fields both extension requests share, checked as Apple checks them; else the error code to answer.
    private static func extensionRequest(
        _ body: [UInt8]
    ) -> ((object: [String: Any], days: Int, reason: Int, requestIdentifier: String)?, ServerAPIErrorCode) {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        guard let days = (object["extendByDays"] as? NSNumber)?.intValue, RenewalExtension.days.contains(days) else {
            return (nil, .invalidExtendByDays)
        }
        guard let reason = (object["extendReasonCode"] as? NSNumber)?.intValue,
            RenewalExtension.reasonCodes.contains(reason)
        else { return (nil, .invalidExtendReasonCode) }
        guard let requestIdentifier = object["requestIdentifier"] as? String, !requestIdentifier.isEmpty else {
            return (nil, .invalidRequestIdentifier)
        }
        return ((object, days, reason, requestIdentifier), .generalBadRequest)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers, with Apple's errors for the body (4000009,
    /// 4000010, 4000011) and a product the app does not sell in that environment (4000023).
    private func massExtendRenewalDate(
        _ request: Request, environment: String, bundleId: String
    ) -> (FakeHTTPAnswer, String) {
        let (body, refusal) = Self.extensionRequest(request.body)
        guard let (object, days, reason, requestIdentifier) = body else { return Self.failed(refusal) }
        guard let productId = object["productId"] as? String,
            api.store.purchases.contains(where: {
                $0.purchase.productId == productId && $0.purchase.environment == environment
                    && $0.purchase.bundleId == bundleId
            })
        else { return Self.failed(.invalidProductId) }
        let storefronts = object["storefrontCountryCodes"] as? [String]
        do {
            let response = try api.store.massExtendRenewalDate(
                RenewalExtension.MassRequest(
                    extendByDays: days, extendReasonCode: reason, requestIdentifier: requestIdentifier,
                    productId: productId, storefrontCountryCodes: storefronts
                ),
                environment: environment, bundleId: bundleId,
                now: Date(timeIntervalSince1970: Double(request.nowMilliseconds) / 1000)
            )
            return Self.ok(response)
        } catch {
            return (FakeHTTPAnswer(status: 500), "500")
        }
    }

    /// Request a Test Notification: the TEST notification made, recorded and sent (once, as Apple does) to the
    /// notification URL, which App Store Connect would hold; 4040007 without one. The answer does not wait for the
    /// sending: Get Test Notification Status reports it once the attempt ended.
    private func requestTestNotification(
        _ request: Request, environment: String, bundleId: String
    ) -> (FakeHTTPAnswer, String) {
        guard let url = api.notificationURL else { return Self.failed(.serverNotificationUrlNotFound) }
        let notification: PurchaseStore.Notification
        do {
            notification = try api.store.testNotification(
                bundleId: bundleId, environment: environment, signedDate: request.nowMilliseconds
            )
        } catch {
            return (FakeHTTPAnswer(status: 500), "500")
        }
        let token = UUID().uuidString.lowercased()
        api.recordTestToken(token, notificationUUID: notification.notificationUUID)
        api.deliver(notification, to: url) { _ in }
        return Self.ok(SendTestNotificationResponse(testNotificationToken: token))
    }

    private func notificationHistory(
        _ request: Request, environment: String, bundleId: String, query: [String: String]
    ) -> (FakeHTTPAnswer, String) {
        let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
        guard object?["startDate"] is NSNumber else { return Self.failed(.invalidStartDate) }
        guard object?["endDate"] is NSNumber else { return Self.failed(.invalidEndDate) }
        guard let body = try? JSONDecoder().decode(NotificationHistoryRequest.self, from: Data(request.body)) else {
            return Self.failed(.generalBadRequest)
        }
        guard body.startDate < body.endDate else { return Self.failed(.startDateAfterEndDate) }
        guard body.transactionId == nil || body.notificationType == nil else {
            return Self.failed(.multipleFiltersSupplied)
        }
        guard let offset = Self.offset(query["paginationToken"], prefix: "fake-page-") else {
            return Self.failed(.invalidPaginationToken)
        }
        let notifications = api.store.notifications(environment: environment, bundleId: bundleId, request: body)
        let page = notifications.dropFirst(offset).prefix(api.pageSize)
        let next = offset + page.count
        let items = page.map { notification in
            NotificationHistoryItem(
                signedPayload: notification.signedPayload,
                sendAttempts: notification.reportedAttempts.map {
                    .init(attemptDate: $0.attemptDate, sendAttemptResult: $0.result)
                }
            )
        }
        return Self.ok(
            NotificationHistoryResponse(
                paginationToken: next < notifications.count ? "fake-page-\(next)" : nil,
                hasMore: next < notifications.count, notificationHistory: items
            )
        )
    }

    private static func route(method: String, path: Substring) -> Route? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch (method, segments.count >= 4 ? Array(segments.prefix(3)) : []) {
        case ("GET", ["inApps", "v1", "transactions"]) where segments.count == 4:
            return segments[3].removingPercentEncoding.map(Route.transactionInfo)
        case ("GET", ["inApps", "v1", "transactions"]) where segments.count == 5 && segments[3] == "appTransactions":
            return segments[4].removingPercentEncoding.map(Route.appTransactionInfo)
        case ("POST", ["inApps", "v1", "notifications"]) where segments == ["inApps", "v1", "notifications", "test"]:
            return .requestTestNotification
        case ("GET", ["inApps", "v1", "notifications"]) where segments.count == 5 && segments[3] == "test":
            return segments[4].removingPercentEncoding.map(Route.testNotificationStatus)
        case ("GET", ["inApps", "v2", "history"]) where segments.count == 4:
            return segments[3].removingPercentEncoding.map(Route.history)
        case ("GET", ["inApps", "v1", "subscriptions"]) where segments.count == 4:
            return segments[3].removingPercentEncoding.map(Route.subscriptionStatuses)
        case ("GET", ["inApps", "v2", "refund"]) where segments.count == 5 && segments[3] == "lookup":
            return segments[4].removingPercentEncoding.map(Route.refundHistory)
        case ("GET", ["inApps", "v1", "lookup"]) where segments.count == 4:
            return segments[3].removingPercentEncoding.map(Route.orderLookup)
        case ("POST", ["inApps", "v1", "notifications"]) where segments == ["inApps", "v1", "notifications", "history"]:
            return .notificationHistory
        case ("PUT", ["inApps", "v1", "subscriptions"]) where segments.count == 5 && segments[3] == "extend":
            return segments[4].removingPercentEncoding.map(Route.extendRenewalDate)
        case ("POST", ["inApps", "v1", "subscriptions"]) where segments == ["inApps", "v1", "subscriptions", "extend", "mass"]:
            return .massExtendRenewalDate
        case ("GET", ["inApps", "v1", "subscriptions"]) where segments.count == 7 && segments[3] == "extend" && segments[4] == "mass":
            guard let product = segments[5].removingPercentEncoding, let request = segments[6].removingPercentEncoding
            else { return nil }
            return .massExtensionStatus(productId: product, requestIdentifier: request)
        case ("PUT", ["inApps", "v1", "transactions"]) where segments.count == 5 && segments[4] == "appAccountToken":
            return segments[3].removingPercentEncoding.map(Route.setAppAccountToken)
        case ("PUT", ["inApps", "v2", "transactions"]) where segments.count == 5 && segments[3] == "consumption":
            return segments[4].removingPercentEncoding.map(Route.consumption)
        default:
            return nil
        }
    }

    /// The path, and the query's parameters percent-decoded (the last of a repeated name).
    static func split(_ uri: String) -> (String, [String: String]) {
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        var query: [String: String] = [:]
        for (name, value) in parameters(uri) { query[name] = value }
        return (String(path), query)
    }

    /// The query's parameters percent-decoded, in order, repeated names kept (`productId=a&productId=b`); a value
    /// that does not decode is the empty string.
    static func parameters(_ uri: String) -> [(name: String, value: String)] {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return (parts.count > 1 ? parts[1] : "").split(separator: "&").compactMap { pair in
            let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = nameValue[0].removingPercentEncoding else { return nil }
            return (name, nameValue.count > 1 ? nameValue[1].removingPercentEncoding ?? "" : "")
        }
    }

    /// The offset a revision or pagination token stands for (nil: the first page); nil when it is not one of ours.
    static func offset(_ token: String?, prefix: String) -> Int? {
        guard let token else { return 0 }
        guard token.hasPrefix(prefix), let offset = Int(token.dropFirst(prefix.count)), offset >= 0 else { return nil }
        return offset
    }

    static func isDigits(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.allSatisfy { (48...57).contains($0) }
    }

    static func ok(_ value: some Encodable) -> (FakeHTTPAnswer, String) {
        ((try? FakePayloads.json(value)).map { FakeHTTPAnswer.json(200, $0) } ?? FakeHTTPAnswer(status: 500), "200")
    }

    private static func error(_ code: ServerAPIErrorCode) -> FakeHTTPAnswer {
        FakeHTTPAnswer.json(code.httpStatus, (try? FakePayloads.json(code.payload)) ?? [])
    }

    static func failed(_ code: ServerAPIErrorCode) -> (FakeHTTPAnswer, String) {
        (error(code), String(code.rawValue))
    }

    /// 429 with 4290000 and `Retry-After` as Apple writes it: the epoch milliseconds when to try again.
    private static func rateLimited(nowMilliseconds: Int64, wait: Int) -> FakeHTTPAnswer {
        var answer = error(.rateLimitExceeded)
        answer.headers.append(("Retry-After", String(nowMilliseconds + Int64(wait))))
        return answer
    }
}
