import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport
import Workers

/// `bench --notification-flood N`: how long a flood of forged notifications holds up a genuine one. One worker runs
/// in this process; N forgeries (the test chain's own certificates in `x5c`, a random signature, each payload
/// distinct) then one genuine REFUND signed by that chain are taken in through `receive_notification()`, as anyone
/// on the internet can through the receiver; then the worker starts, the whole flood queued ahead of the genuine one.
/// Reported: the worker's start → the genuine REFUND applied (polled every 5 ms), and → every forgery rejected.
public struct NotificationFloodRun {
    public let configuration: BenchConfiguration
    let logger: Logger
    let progress: (String) -> Void

    static let appAppleId: Int64 = 1_234_567_890

    public init(configuration: BenchConfiguration, logLevel: Logger.Level, progress: @escaping (String) -> Void) {
        self.configuration = configuration
        var logger = Logger(label: "receipt-worker.bench")
        logger.logLevel = logLevel
        self.logger = logger
        self.progress = progress
    }

    public func run(forgeries: Int) throws -> NotificationFloodReport {
        let environment = BenchEnvironment()
        defer { environment.tearDown() }
        progress("starting PostgreSQL, migrating")
        let admin = try environment.startNotificationDatabase(configuration, appAppleId: Self.appAppleId)
        defer { admin.close() }

        let signer = try JWSSigner(chain: SigningChain())
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        progress("forging \(forgeries) notifications")
        let forged = try (0..<forgeries).map { try Self.forgery(signer: signer, tag: tag, index: $0) }
        let genuine = try signer.sign(
            Self.refund(transactionId: "flood-\(tag)-genuine", uuid: UUID().uuidString, signer: signer)
        )

        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: false)
        )
        var workerConfiguration = WorkerConfiguration(
            workerId: "bench-flood-\(tag)",
            rules: RulesConfiguration(bundleIds: [BenchEnvironment.bundleId])
        )
        if let threads = configuration.notificationThreads { workerConfiguration.notificationThreads = threads }
        if let writers = configuration.writeConnections { workerConfiguration.writeConnections = writers }
        let worker = Worker(
            configuration: workerConfiguration, databaseURL: environment.databaseURL, client: nil,
            signedData: verifier, logger: logger
        )
        progress("taking in \(forgeries) forgeries, then the genuine REFUND")
        let inbox = NotificationInbox(connection: admin)
        let floodStart = ContinuousClock.now
        var start = 0
        while start < forged.count {
            let chunk = Array(forged[start..<min(start + configuration.enqueueBatch, forged.count)])
            _ = try admin.query(
                "SELECT receive_notification(p, 'receiver') FROM unnest($1::text[]) AS p",
                [BenchEnqueuer.arrayLiteral(chunk)]
            )
            start += chunk.count
        }
        let intakeSeconds = (ContinuousClock.now - floodStart).seconds
        let genuineId = try inbox.receive(genuine, source: .receiver)

        progress("starting the worker")
        let genuineSent = ContinuousClock.now
        let running = try WorkerThread(worker)
        defer { running.stop() }
        let deadline = genuineSent + .seconds(configuration.timeoutSeconds)
        var genuineState = "queued"
        while ContinuousClock.now < deadline {
            genuineState = try admin.query(
                "SELECT state FROM receipt_notifications WHERE id = $1", [String(genuineId)]
            )[0, "state"] ?? "missing"
            if !["queued", "running", "retry"].contains(genuineState) { break }
            Thread.sleep(forTimeInterval: 0.005)
        }
        let genuineSeconds = (ContinuousClock.now - genuineSent).seconds
        guard genuineState == "applied" else {
            throw BenchError(
                "the genuine REFUND is \(genuineState) \(String(format: "%.1f", genuineSeconds)) s after the worker "
                    + "started" + (genuineState == "queued" || genuineState == "running" ? " (--timeout)" : "")
            )
        }
        progress("genuine REFUND applied; waiting for every forgery to be final")
        var floodSeconds = genuineSeconds
        while ContinuousClock.now < deadline {
            let open = try admin.query(
                "SELECT count(*) AS n FROM receipt_notifications WHERE state IN ('queued', 'running', 'retry')"
            ).int64(0, "n")
            floodSeconds = (ContinuousClock.now - genuineSent).seconds
            if open == 0 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        running.stop()
        if let error = running.error { throw error }

        let figures = try admin.query(
            """
            SELECT count(*) FILTER (WHERE state = 'rejected' AND reason = 'invalid_signature') AS rejected,
                   count(*) FILTER (WHERE attempts > 1) AS claimed_again,
                   count(*) FILTER (WHERE finished_at IS NULL) AS unfinished
            FROM receipt_notifications WHERE id <> $1
            """,
            [String(genuineId)]
        )
        return NotificationFloodReport(
            forgeries: forgeries,
            notificationThreads: workerConfiguration.notificationThreads,
            writeConnections: workerConfiguration.writeConnections,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            database: environment.databaseDescription,
            intakeSeconds: intakeSeconds,
            genuineSeconds: genuineSeconds,
            forgeriesRejected: Int(figures.int64(0, "rejected") ?? 0),
            forgeriesUnfinished: Int(figures.int64(0, "unfinished") ?? 0),
            claimedAgain: Int(figures.int64(0, "claimed_again") ?? 0),
            floodSeconds: floodSeconds
        )
    }

    /// A notification as the App Store sends one: a REFUND of `transactionId`, its transaction signed inside.
    static func refund(transactionId: String, uuid: String, signer: JWSSigner? = nil) throws -> Data {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId,
            "bundleId": BenchEnvironment.bundleId, "productId": "com.example.bench.coins", "purchaseDate": now - 86_400_000,
            "quantity": 1, "type": "Consumable", "environment": "Production", "signedDate": now,
            "revocationDate": now - 1_000, "revocationReason": 0,
        ]
        var data: [String: Any] = [
            "bundleId": BenchEnvironment.bundleId, "environment": "Production", "appAppleId": appAppleId,
        ]
        let transactionJSON = try JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])
        // A forgery carries its inner transaction unsigned-looking (signed by no one the worker knows): the outer
        // signature fails first either way.
        data["signedTransactionInfo"] = try signer?.sign(transactionJSON) ?? Base64URL.encode(transactionJSON)
        let object: [String: Any] = [
            "notificationType": "REFUND", "notificationUUID": uuid, "version": "2.0", "signedDate": now, "data": data,
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// A forgery: the chain's real certificates in the header (as copied from any genuine notification), a REFUND
    /// payload, and 64 random bytes where the signature goes.
    static func forgery(signer: JWSSigner, tag: String, index: Int) throws -> String {
        let genuine = try signer.sign(try refund(transactionId: "flood-\(tag)-\(index)", uuid: UUID().uuidString))
        let signingInput = genuine[..<(genuine.lastIndex(of: ".") ?? genuine.endIndex)]
        let signature = (0..<64).map { _ in UInt8.random(in: 0...255) }
        return signingInput + "." + Base64URL.encode(signature)
    }
}
