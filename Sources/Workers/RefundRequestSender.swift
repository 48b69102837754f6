import AppStoreClient
import Foundation
import Logging
import PostgresClient

/// Answers Apple's refund requests (CONSUMPTION_REQUEST notifications, receipt_refund_requests) with Send Consumption
/// Information v2, for `work`: the requests whose answer is due (the app's own, or the product's policy after
/// `answerAfterMinutes`) are taken from receipt_refund_requests_due(), which also skips those without the customer's
/// consent; each answer is sent once, and on a 5xx, a 429 or a timeout again after `retrySeconds` (or Apple's
/// Retry-After) until respond_by, then failed. What a request says of the customer is never logged: only its id.
public struct RefundRequestSender: Sendable {
    public let client: ServerAPIClient
    /// CONSUMPTION_ANSWER_AFTER_MINUTES: how long the app has to answer before the policy does.
    public var answerAfterMinutes: Int
    public var retrySeconds: Double
    public var batch: Int
    public let logger: Logger

    public init(
        client: ServerAPIClient, answerAfterMinutes: Int = 60, retrySeconds: Double = 60, batch: Int = 20,
        logger: Logger = Logger(label: "receipt-worker.refund-requests")
    ) {
        self.client = client
        self.answerAfterMinutes = answerAfterMinutes
        self.retrySeconds = retrySeconds
        self.batch = batch
        self.logger = logger
    }

    /// What one pass did.
    public struct Pass: Sendable, Hashable {
        public var answered = 0
        public var retried = 0
        public var failed = 0

        public init() {}

        /// Counts a request by its new state.
        public mutating func count(_ state: String?) {
            switch state {
            case "answered": answered += 1
            case "pending": retried += 1
            default: failed += 1
            }
        }
    }

    /// One pass: every due request sent, and what came of it written back, on one connection (held while Apple
    /// answers; `work` uses `due`, `send` and `record` to hold its shared connection only for the statements).
    public func runOnce(_ connection: PostgresConnection) throws -> Pass {
        var pass = Pass()
        for request in try due(connection) {
            pass.count(try record(connection, request, send(request)))
        }
        return pass
    }

    /// A request whose answer is due, held (next_attempt_at) while it is sent.
    public struct Due: Sendable, Hashable {
        public var id: Int64
        public var environment: String?
        public var bundleId: String?
        public var transactionId: String
        /// Send Consumption Information's body, exactly as it is sent and then recorded.
        public var answer: String
    }

    /// How sending went: answered, retry or failed, the error to record (no customer data), and when to retry.
    public struct Sent: Sendable, Hashable {
        public var outcome: String
        public var error: String?
        public var retryInSeconds: Double
    }

    /// The requests due now (receipt_refund_requests_due(), which also settles the skipped and the expired), each
    /// held from other workers for `holdSeconds`.
    public func due(_ connection: PostgresConnection) throws -> [Due] {
        let due = try connection.query(
            "SELECT id, environment, bundle_id, transaction_id, answer FROM receipt_refund_requests_due($1, $2, $3)",
            [String(batch), String(answerAfterMinutes), String(holdSeconds)]
        )
        return due.rows.indices.compactMap { row in
            guard let id = due.int64(row, "id"), let answer = due[row, "answer"],
                let transactionId = due[row, "transaction_id"]
            else { return nil }
            return Due(
                id: id, environment: due[row, "environment"], bundleId: due[row, "bundle_id"],
                transactionId: transactionId, answer: answer
            )
        }
    }

    /// How long a request taken by `due` is held from other workers: long enough for the whole batch to time out
    /// one after the other, so no other worker sends it again meanwhile (a worker that died holding it, sooner).
    var holdSeconds: Int {
        let batchSeconds = Double(batch) * (client.configuration.timeoutSeconds + 1)
        let seconds = min(max(retrySeconds, 30, batchSeconds), 3600)
        return seconds.isFinite ? Int(seconds.rounded(.up)) : 3600
    }

    /// Sends one answer to Apple (no database connection needed meanwhile).
    public func send(_ request: Due) -> Sent {
        let outcome: (String, String?, Double)
        switch (request.environment, request.bundleId) {
        case ("Production", let bundleId?), ("Sandbox", let bundleId?):
            let endpoint: AppStoreEndpoint = request.environment == "Production" ? .production : .sandbox
            let (result, _) = client.sendConsumptionInformation(
                transactionId: request.transactionId, body: Array(request.answer.utf8), bundleId: bundleId,
                environment: endpoint
            )
            outcome = Self.outcome(result, retrySeconds: retrySeconds)
        case (let environment, _):
            outcome = ("failed", "not sent: Apple is not asked about \(environment ?? "unknown") data", 0)
        }
        return Sent(outcome: outcome.0, error: outcome.1, retryInSeconds: outcome.2)
    }

    /// Writes back how sending went (receipt_refund_request_result()); returns the request's new state.
    public func record(_ connection: PostgresConnection, _ request: Due, _ sent: Sent) throws -> String? {
        let state = try connection.query(
            "SELECT receipt_refund_request_result($1, $2, $3, $4, $5) AS state",
            [
                String(request.id), sent.outcome, sent.outcome == "answered" ? request.answer : nil, sent.error,
                String(sent.retryInSeconds),
            ]
        )[0, "state"]
        if state == "failed" {
            logger.error(
                "refund request not answered", metadata: ["request": "\(request.id)", "error": "\(sent.error ?? "")"]
            )
        }
        return state
    }

    /// answered, retry (with when) or failed, and the error to record (Apple's status and code, no customer data).
    static func outcome(_ result: ServerAPIResult<Bool>, retrySeconds: Double) -> (String, String?, Double) {
        switch result {
        case .success:
            ("answered", nil, 0)
        case .retryable(let failure):
            ("retry", "send_consumption: \(failure.message)", failure.retryAfterSeconds ?? retrySeconds)
        case .configurationError(let failure):
            // Our key or app: tried again (until respond_by) once it is fixed.
            ("retry", "send_consumption: \(failure.message)", max(retrySeconds, 60))
        case .rejected(let failure), .notFound(let failure):
            ("failed", "send_consumption: \(failure.message)", 0)
        }
    }
}
