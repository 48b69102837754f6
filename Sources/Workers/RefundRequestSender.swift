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
    }

    /// One pass: every due request sent, and what came of it written back.
    public func runOnce(_ connection: PostgresConnection) throws -> Pass {
        let due = try connection.query(
            "SELECT id, environment, bundle_id, transaction_id, answer FROM receipt_refund_requests_due($1, $2, $3)",
            [String(batch), String(answerAfterMinutes), String(max(Int(retrySeconds.rounded(.up)), 30))]
        )
        var pass = Pass()
        for row in due.rows.indices {
            guard let id = due.int64(row, "id"), let answer = due[row, "answer"],
                let transactionId = due[row, "transaction_id"]
            else { continue }
            let outcome: (String, String?, Double)
            switch (due[row, "environment"], due[row, "bundle_id"]) {
            case ("Production", let bundleId?), ("Sandbox", let bundleId?):
                let endpoint: AppStoreEndpoint = due[row, "environment"] == "Production" ? .production : .sandbox
                let (result, _) = client.sendConsumptionInformation(
                    transactionId: transactionId, body: Array(answer.utf8), bundleId: bundleId, environment: endpoint
                )
                outcome = Self.outcome(result, retrySeconds: retrySeconds)
            case (let environment, _):
                outcome = ("failed", "not sent: Apple is not asked about \(environment ?? "unknown") data", 0)
            }
            let state = try connection.query(
                "SELECT receipt_refund_request_result($1, $2, $3, $4, $5) AS state",
                [String(id), outcome.0, outcome.0 == "answered" ? answer : nil, outcome.1, String(outcome.2)]
            )[0, "state"]
            switch state {
            case "answered": pass.answered += 1
            case "pending": pass.retried += 1
            default: pass.failed += 1
            }
            if state == "failed" {
                logger.error("refund request not answered", metadata: ["request": "\(id)", "error": "\(outcome.1 ?? "")"])
            }
        }
        return pass
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
