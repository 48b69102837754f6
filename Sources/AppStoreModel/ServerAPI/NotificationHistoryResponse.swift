/// One page of Get Notification History.
public struct NotificationHistoryResponse: Codable, Sendable, Hashable {
    /// The token for the next page (the `paginationToken` query parameter, with the same request body).
    public var paginationToken: String?
    /// Whether another page follows.
    public var hasMore: Bool?
    public var notificationHistory: [NotificationHistoryItem]?

    public init(paginationToken: String? = nil, hasMore: Bool? = nil, notificationHistory: [NotificationHistoryItem]?) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// One notification Apple sent (or tried to send) to our server.
public struct NotificationHistoryItem: Codable, Sendable, Hashable {
    /// The notification as Apple sent it: a JWS whose payload is a ResponseBodyV2DecodedPayload.
    public var signedPayload: String?
    /// Apple's attempts to deliver it, at most six.
    public var sendAttempts: [SendAttempt]?

    public init(signedPayload: String?, sendAttempts: [SendAttempt]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    public struct SendAttempt: Codable, Sendable, Hashable {
        /// Milliseconds since 1970.
        public var attemptDate: Int64?
        /// "SUCCESS", "TIMED_OUT", "TLS_ISSUE", "NO_RESPONSE", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", …
        public var sendAttemptResult: String?

        public init(attemptDate: Int64?, sendAttemptResult: String?) {
            self.attemptDate = attemptDate
            self.sendAttemptResult = sendAttemptResult
        }
    }
}
