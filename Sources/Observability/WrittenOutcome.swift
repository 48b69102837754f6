/// What a worker wrote for one job, as plain labels, so this module needs no knowledge of the queue.
public struct WrittenOutcome: Sendable, Hashable {
    /// What the database made of it: verified, rejected, retry, dead, or lost (the lease was no longer ours).
    public var state: String
    /// The rejection or dead reason.
    public var reason: String?
    /// What the worker decided: verified, rejected, retry or config_error (written as state retry).
    public var kind: String
    /// For a retry: why there was no verdict (timeout, connection, http_status, apple_status, …).
    public var retryCause: String?
    /// For a credit: the environment of the purchase (Production, Sandbox).
    public var environment: String?
    /// For a configuration error: Apple's status (21004, 21000) or the HTTP status (http_404).
    public var appleStatus: String?

    public init(
        state: String, reason: String? = nil, kind: String, retryCause: String? = nil, environment: String? = nil,
        appleStatus: String? = nil
    ) {
        self.state = state
        self.reason = reason
        self.kind = kind
        self.retryCause = retryCause
        self.environment = environment
        self.appleStatus = appleStatus
    }
}
