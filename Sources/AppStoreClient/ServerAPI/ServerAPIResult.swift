import AppStoreModel

/// What one App Store Server API call (production, then once the sandbox) came to.
public enum ServerAPIResult<Value: Sendable>: Sendable {
    /// Apple answered; `environment` is the one that did.
    case success(Value, environment: AppStoreEndpoint)
    /// No environment asked knows the id (4040010, 4040005, 4040001, or an order lookup's status 1 in production and
    /// in the sandbox): the purchase does not exist, for a worker a `transaction_not_found`.
    case notFound(AppStoreFailure)
    /// Apple says the request is invalid (HTTP 400: 4000006 invalid transaction id, …), or the client refused to
    /// send an id that cannot be Apple's (cause `invalid_request`). Asking again will not help.
    case rejected(AppStoreFailure)
    /// Our configuration is wrong: HTTP 401/403 (the key, key id or issuer id), an app Apple does not know in any
    /// environment asked, a URL that answers 404 without an Apple error. Costs no attempt; say it loudly.
    case configurationError(AppStoreFailure)
    /// No verdict yet: 429 (with `retryAfterSeconds`), 5xx and 5000001, Apple's "try again" not-found codes (4040002,
    /// 4040004, 4040006), a transport failure, a body that is not Apple's JSON, pacing held too long.
    case retryable(AppStoreFailure)

    /// The same outcome with the value changed.
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> ServerAPIResult<Other> {
        switch self {
        case .success(let value, let environment): .success(transform(value), environment: environment)
        case .notFound(let failure): .notFound(failure)
        case .rejected(let failure): .rejected(failure)
        case .configurationError(let failure): .configurationError(failure)
        case .retryable(let failure): .retryable(failure)
        }
    }

    /// The value, if Apple answered with one.
    public var value: Value? {
        if case .success(let value, _) = self { return value }
        return nil
    }

    /// The failure, unless Apple answered with a value.
    public var failure: AppStoreFailure? {
        switch self {
        case .success: nil
        case .notFound(let failure), .rejected(let failure), .configurationError(let failure),
            .retryable(let failure):
            failure
        }
    }
}

/// A customer's transactions for one app, from Get Transaction History v2: the pages read.
public struct TransactionHistory: Sendable, Hashable {
    /// Every page's `signedTransactions`, in Apple's order (JWS: verify each before trusting it).
    public var signedTransactions: [String]
    /// Pages read.
    public var pages: Int
    /// Set when the reading stopped while Apple had more (`maxHistoryPages` reached, or `satisfied`): pass it as
    /// `revision`, with the same query, to go on.
    public var nextRevision: String?
    /// The caller's `until` accepted the last page read: the reading ended there on purpose.
    public var satisfied: Bool

    public init(signedTransactions: [String], pages: Int, nextRevision: String?, satisfied: Bool = false) {
        self.signedTransactions = signedTransactions
        self.pages = pages
        self.nextRevision = nextRevision
        self.satisfied = satisfied
    }

    /// Whether every page was read.
    public var isComplete: Bool { nextRevision == nil }

    /// Whether `maxHistoryPages` cut the reading before Apple's last page and before `until` was satisfied: what
    /// was read is part of a history, and nothing may be decided from it.
    public var isTruncated: Bool { nextRevision != nil && !satisfied }
}

/// One page of Get Notification History.
public struct NotificationHistoryPage: Sendable, Hashable {
    /// The notifications (each `signedPayload` a JWS: verify it before trusting it).
    public var notifications: [NotificationHistoryItem]
    /// Whether another page follows.
    public var hasMore: Bool
    /// Pass it, with the same request, for the next page.
    public var paginationToken: String?

    public init(notifications: [NotificationHistoryItem], hasMore: Bool, paginationToken: String?) {
        self.notifications = notifications
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }
}
