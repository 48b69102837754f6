extension PurchaseStore {
    /// A notification the fake App Store made: recorded for Get Notification History, and sent to the app's server
    /// when asked (`FakeAppStoreServer.deliver`).
    public struct Notification: Sendable, Hashable {
        /// One attempt to send it, as Get Notification History reports it (sendAttemptItem).
        public struct SendAttempt: Sendable, Hashable {
            /// Milliseconds since 1970.
            public var attemptDate: Int64
            /// Apple's sendAttemptResult: SUCCESS, UNSUCCESSFUL_HTTP_RESPONSE_CODE, NO_RESPONSE, TIMED_OUT, …
            public var result: String

            public init(attemptDate: Int64, result: String) {
                self.attemptDate = attemptDate
                self.result = result
            }

            public var succeeded: Bool { result == "SUCCESS" }
        }

        /// The payload's notificationUUID (lowercase). A forged copy keeps the UUID of the notification it copies.
        public var notificationUUID: String
        public var environment: String
        public var bundleId: String
        public var customerId: String
        public var transactionId: String
        public var notificationType: String
        public var subtype: String?
        /// The payload's signedDate, milliseconds since 1970.
        public var signedDate: Int64
        /// Whether it reached the app's server (Get Notification History's `onlyFailures`). Until it is really sent,
        /// what the notification's maker said; after that, whether any attempt succeeded.
        public var delivered: Bool
        /// The attempts to send it, oldest first; empty until it is sent.
        public var sendAttempts: [SendAttempt] = []
        /// Signed by a chain nobody trusts: kept only once sent, and never in Get Notification History.
        public var forged = false
        /// The JWS: what an app's server receives as `{"signedPayload": …}`.
        public var signedPayload: String

        /// The attempts Get Notification History reports: the real ones, or for one never sent, the attempt its
        /// maker described (`delivered`) at its signed date.
        var reportedAttempts: [SendAttempt] {
            guard sendAttempts.isEmpty else { return sendAttempts }
            return [SendAttempt(attemptDate: signedDate, result: delivered ? "SUCCESS" : "NO_RESPONSE")]
        }
    }
}
