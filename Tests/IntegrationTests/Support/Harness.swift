import AppStoreClient
import AppStoreModel
import AppStoreSignedData
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing
import ThreadSupport
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
    /// Verifies signed transactions made by `signer` and by the fake App Store (both roots trusted, offline at each
    /// signedDate).
    let signedData: SignedDataVerifier
    /// The App Store Server API client, talking to the fake with a key made for this test.
    let serverAPI: ServerAPIClient
    /// That key (PEM, PKCS#8), for child processes.
    let apiKeyPEM: String

    /// `timeoutSeconds` (and the 5 s connect timeout) are far above what a loopback call takes even on a loaded
    /// machine, so that no ordinary answer costs an attempt (tests count attempts exactly; 2 s was not enough). A test
    /// that makes the fake hang sets a shorter timeout of its own.
    init(fakeConfiguration: FakeAppStoreConfiguration = FakeAppStoreConfiguration(), timeoutSeconds: Double = 15) throws {
        CurlGlobal.initialize()
        databaseURL = try TestServer.get().freshDatabase()
        var fakeConfiguration = fakeConfiguration
        fakeConfiguration.sharedSecret = fakeConfiguration.sharedSecret ?? Self.secret
        let apiKey = P256.Signing.PrivateKey()
        apiKeyPEM = apiKey.pemRepresentation
        fakeConfiguration.apiKeys[Self.apiKeyID] = apiKey.publicKey
        fakeConfiguration.threads = 1
        fake = try FakeAppStoreServer.start(fakeConfiguration)
        transport = try CurlMultiTransport()
        client = try AppStoreClient(
            configuration: AppStoreConfiguration(
                productionURL: fake.productionURL, sandboxURL: fake.sandboxURL, sharedSecret: Self.secret,
                timeoutSeconds: timeoutSeconds, connectTimeoutSeconds: 5
            ),
            transport: transport
        )
        db = try PostgresConnection(databaseURL)
        store = JobStore(connection: db)
        signedData = SignedDataVerifier(
            configuration: .init(
                rootCertificates: [try Self.signer.get().chain.root, fake.signingChain.root], onlineChecks: false
            )
        )
        serverAPI = try ServerAPIClient(
            configuration: ServerAPIConfiguration(
                keyID: Self.apiKeyID, issuerID: Self.apiIssuerID,
                privateKey: try ServerAPIPrivateKey(pemRepresentation: apiKey.pemRepresentation),
                productionURL: fake.apiProductionURL, sandboxURL: fake.apiSandboxURL, timeoutSeconds: timeoutSeconds,
                connectTimeoutSeconds: 5
            ),
            transport: transport
        )
    }

    static let apiKeyID = "TESTKEY123"
    static let apiIssuerID = "57246542-96fe-1a63-e053-0824d011072a"

    /// An App Store-shaped signing chain made once per test process, and its signer.
    static let signer = Result { try JWSSigner(chain: SigningChain()) }

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
    func drain(
        workers count: Int = 1, timeout: Double = 60, serverAPI withAPI: Bool = false,
        _ change: (inout WorkerConfiguration) -> Void = { _ in }
    ) throws {
        let threads = try startWorkers(count, serverAPI: withAPI, change)
        let deadline = Date(timeIntervalSinceNow: timeout)
        guard threads.allSatisfy({ $0.wait(seconds: deadline.timeIntervalSinceNow) }) else {
            throw Self.giveUp(threads, reason: "workers did not drain the queue within \(timeout) s")
        }
        try Self.rethrow(threads)
    }

    /// Throws the first error a worker's `run()` ended with: a worker that failed did not drain anything.
    static func rethrow(_ threads: [WorkerThread]) throws {
        if let error = threads.lazy.compactMap(\.error).first { throw error }
    }

    /// `count` workers in drain mode, each on a thread of its own, logging only critical messages.
    func startWorkers(
        _ count: Int, serverAPI withAPI: Bool = false, signedData verifier: SignedDataVerifier? = nil,
        _ change: (inout WorkerConfiguration) -> Void
    ) throws -> [WorkerThread] {
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        return try (0..<count).map { _ in
            let configuration = Self.configuration(change)
            return try WorkerThread(
                Worker(
                    configuration: configuration, databaseURL: databaseURL, client: client,
                    signedData: verifier ?? signedData, serverAPI: withAPI ? serverAPI : nil, logger: logger
                )
            )
        }
    }

    /// Shuts `threads`' workers down, gives them 10 s to return, and returns the error to throw.
    static func giveUp(_ threads: [WorkerThread], reason: String) -> TestSetupError {
        for thread in threads { thread.worker.shutdown() }
        let deadline = Date(timeIntervalSinceNow: 10)
        for thread in threads { thread.wait(seconds: deadline.timeIntervalSinceNow) }
        return TestSetupError(reason)
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

    /// Asks the fake App Store about `receipt` through the real client, as a worker does, and waits for the answer.
    func verify(_ receipt: String, timeout: Double = 60) throws -> (result: AppStoreResult, calls: [AppStoreCall]) {
        let answer = ConditionLock<(AppStoreResult, [AppStoreCall])?>(nil)
        client.verify(receiptData: receipt) { result, calls in answer.withLock { $0 = (result, calls) } }
        guard let (result, calls) = answer.wait(for: { $0 }, timeout: .seconds(timeout)) else {
            throw TestSetupError("the App Store client did not answer within \(timeout) s")
        }
        return (result, calls)
    }

    /// A sandbox receipt that the sandbox answers with 21008 ("send it to production"): production says 21007,
    /// then the sandbox 21008, a second redirect within one attempt.
    static func redirectLoopReceipt(_ transaction: String) -> String {
        receipt(environment: "Sandbox", purchases: [purchase(transaction)], status: 21008)
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

    /// Polls `condition` every 20 ms until it holds or `timeout` passes; true if it held. For conditions that come
    /// about by themselves (a lease running out, a worker's call answered), instead of a fixed sleep.
    /// Runs `sql` with `parameters` on a connection of its own, on a thread of its own (for a statement that must
    /// wait for a lock the test holds): its first value ("NULL" for none), or "error: …".
    func queryInBackground(_ sql: String, _ parameters: [String]) -> ConditionLock<String?> {
        let url = databaseURL
        let outcome = ConditionLock<String?>(nil)
        Thread.detachNewThread {
            let text: String
            do {
                let connection = try PostgresConnection(url)
                defer { connection.close() }
                text = try connection.query(sql, parameters).rows.first?.first.flatMap { $0 } ?? "NULL"
            } catch {
                text = "error: \(error)"
            }
            outcome.withLock { $0 = text }
        }
        return outcome
    }

    func waitUntil(_ timeout: Double, _ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// The payloads `listener` received on `channel` up to now: a marker is sent on it from the harness's
    /// connection, and notifications arrive in commit order, so what came before the marker is everything that
    /// was sent before. Fails the test if the marker does not arrive within a minute.
    func notificationsSoFar(on listener: PostgresConnection, channel: String) throws -> [String] {
        let marker = "marker-\(UUID().uuidString)"
        _ = try db.query("SELECT pg_notify($1, $2)", [channel, marker])
        var payloads: [String] = []
        let deadline = Date(timeIntervalSinceNow: 60)
        while !payloads.contains(marker) && Date() < deadline {
            payloads += try listener.waitForNotifications(timeoutMilliseconds: 500).map(\.payload)
        }
        try #require(payloads.last == marker, "the marker did not arrive last: \(payloads)")
        return Array(payloads.dropLast())
    }

    /// True once no running job holds a lease that has not run out, by the database's clock.
    func leasesRunOut() throws -> Bool {
        try scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'running' AND lease_until >= now()") == "0"
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
