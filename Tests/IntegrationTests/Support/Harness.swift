import AppStoreClient
import AppStoreModel
import CurlHTTP
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing
import Workers

/// One test's world: a fresh database, the fake App Store on loopback, a libcurl transport, and workers run
/// in this process until every job is final.
final class Harness {
    static let secret = "test-shared-secret"
    let databaseURL: String
    let fake: FakeAppStoreServer
    let transport: CurlMultiTransport
    let client: AppStoreClient
    let db: PostgresConnection
    let store: JobStore

    init(fakeConfiguration: FakeAppStoreConfiguration = FakeAppStoreConfiguration(), timeoutSeconds: Double = 2) throws {
        CurlGlobal.initialize()
        databaseURL = try TestServer.get().freshDatabase()
        var fakeConfiguration = fakeConfiguration
        fakeConfiguration.sharedSecret = fakeConfiguration.sharedSecret ?? Self.secret
        fakeConfiguration.threads = 1
        fake = try FakeAppStoreServer.start(fakeConfiguration)
        transport = try CurlMultiTransport()
        client = try AppStoreClient(
            configuration: AppStoreConfiguration(
                productionURL: fake.productionURL, sandboxURL: fake.sandboxURL, sharedSecret: Self.secret,
                timeoutSeconds: timeoutSeconds, connectTimeoutSeconds: 1
            ),
            transport: transport
        )
        db = try PostgresConnection(databaseURL)
        store = JobStore(connection: db)
    }

    deinit {
        transport.shutdown()
        fake.stop()
        db.close()
    }

    static func configuration(_ change: (inout WorkerConfiguration) -> Void = { _ in }) -> WorkerConfiguration {
        var configuration = WorkerConfiguration(
            workerId: "test-\(UUID().uuidString.prefix(8))",
            maxInFlight: 64,
            claimBatch: 16,
            leaseSeconds: 5,
            pollIntervalSeconds: 0.05,
            retry: RetryPolicy(baseSeconds: 0.05, maxSeconds: 0.2, maxAttempts: 6),
            rules: RulesConfiguration(bundleIds: Set(TestServer.bundleIds)),
            schedulerIntervalSeconds: 0.05,
            drain: true,
            shutdownGraceSeconds: 2
        )
        change(&configuration)
        return configuration
    }

    /// Runs `count` workers until the queue is drained; fails the test if that takes longer than `timeout`.
    func drain(workers count: Int = 1, timeout: Double = 60, _ change: (inout WorkerConfiguration) -> Void = { _ in })
        throws
    {
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        let engines = (0..<count).map { _ in
            Worker(
                configuration: Self.configuration(change), databaseURL: databaseURL, client: client, logger: logger
            )
        }
        let group = DispatchGroup()
        for engine in engines {
            DispatchQueue.global().async(group: group) { try? engine.run() }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            engines.forEach { $0.shutdown() }
            _ = group.wait(timeout: .now() + 10)
            throw TestSetupError("workers did not drain the queue within \(timeout) s")
        }
    }

    func enqueue(
        _ receipt: String, order: String, user: String = "user-1", product: String = "pro.monthly",
        transaction: String? = nil, bundle: String = "com.example.app", orderCreatedAt: String? = nil
    ) throws -> Int64 {
        try store.enqueue(
            receiptData: receipt, orderId: order, userId: user, productId: product, transactionId: transaction,
            bundleId: bundle, orderCreatedAt: orderCreatedAt
        )
    }

    /// One job's columns, as text.
    func job(_ id: Int64) throws -> [String: String] {
        let result = try db.query(
            """
            SELECT state, coalesce(reason, '') AS reason, attempts::text, coalesce(environment, '') AS environment,
                   coalesce(apple_status::text, '') AS apple_status, coalesce(last_error, '') AS last_error,
                   coalesce(result::text, '') AS result, (finished_at IS NOT NULL)::text AS finished
            FROM receipt_jobs WHERE id = $1
            """,
            [String(id)]
        )
        var row: [String: String] = [:]
        for (index, column) in result.columns.enumerated() { row[column] = result.rows.first?[index] ?? nil }
        return row
    }

    func scalar(_ sql: String, _ parameters: [String?] = []) throws -> String? {
        try db.query(sql, parameters).rows.first?.first ?? nil
    }

    /// A scenario receipt for the fake App Store.
    static func receipt(
        environment: String = "Production", bundle: String = "com.example.app", purchases: [InAppTransaction],
        faults: [ScenarioReceipt.Fault] = [], status: Int? = nil, nonce: String = UUID().uuidString
    ) -> String {
        ScenarioReceipt(
            environment: environment, bundleId: bundle, inApp: purchases, status: status, faults: faults, nonce: nonce
        ).base64()
    }

    static let now = Int64(Date().timeIntervalSince1970 * 1000)

    static func purchase(
        _ transaction: String, product: String = "pro.monthly", original: String? = nil, agoMs: Int64 = 60_000,
        expiresInMs: Int64? = nil, cancelled: Bool = false
    ) -> InAppTransaction {
        InAppTransaction(
            quantity: 1, productId: product, transactionId: transaction, originalTransactionId: original ?? transaction,
            purchaseDateMs: now - agoMs, expiresDateMs: expiresInMs.map { now + $0 },
            cancellationDateMs: cancelled ? now - 1000 : nil, cancellationReason: cancelled ? "0" : nil
        )
    }
}
