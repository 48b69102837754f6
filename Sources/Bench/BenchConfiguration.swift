import Workers

/// What one benchmark run does. Filled from flags by `receipt-worker bench`.
public struct BenchConfiguration: Sendable {
    /// Where the benchmark's jobs go.
    public enum Database: Sendable {
        /// A temporary PostgreSQL cluster started for the run and deleted afterwards (the default).
        case temporaryCluster
        /// An existing database, migrated and used as it is; the run's jobs and ledger rows stay in it.
        case existing(url: String)
        /// A new database `name` created on the server of `serverURL` for the run, and dropped afterwards.
        case scratch(serverURL: String, name: String)
    }

    /// Scenario receipts enqueued and verified.
    public var receipts: Int
    /// Finished jobs (with their ledger rows, events, notifications and subscriptions) put in the tables before the
    /// run (`--prefill`, issue 40): the run then measures a database that has grown. 0: empty tables.
    public var prefill: Int = 0
    /// Server settings of the temporary cluster (`--postgres-setting name=value`), e.g. shared_buffers sized as a
    /// production server's would be for tables that have grown.
    public var postgresSettings: [String: String] = [:]
    /// The fake App Store's delay before each answer.
    public var appleLatencyMilliseconds: Int
    /// Random extra delay, 0…N ms, added to each answer.
    public var appleJitterMilliseconds: Int
    /// The worker's MAX_IN_FLIGHT.
    public var maxInFlight: Int
    /// The most jobs per claim statement; nil keeps the worker's default.
    public var claimBatch: Int?
    /// The most outcomes per receipt_complete() call; nil keeps the worker's default.
    public var writeBatch: Int?
    /// Rows per enqueue statement.
    public var enqueueBatch: Int
    /// Single jobs enqueued one at a time against the idle worker, to measure pickup latency.
    public var pickupSamples: Int
    /// Seconds after the last verdict, the worker idle, at which the resident set is read again: what a burst
    /// leaves once the transport has given back what it no longer needs (10–20 s after the burst). 0 skips it.
    public var settleSeconds: Double
    public var database: Database
    /// With DATABASE_URL, the postmaster of its server when that runs on this machine: PostgreSQL's CPU during the
    /// drain is then read from its process tree, as for the temporary cluster.
    public var postgresPID: Int32?
    /// For the temporary cluster: fsync, synchronous_commit, full_page_writes and wal_init_zero on (off by default there).
    public var fsync: Bool
    /// Event loop threads of the fake App Store.
    public var fakeAppStoreThreads: Int
    /// When set, the command that runs the fake App Store in a child process (`[executable, "fake-appstore"]`);
    /// nil runs it in this process.
    public var fakeAppStoreCommand: [String]?
    /// The directory of the numbered SQL files.
    public var sqlDirectory: String
    /// Give up when the receipts are not all final after this many seconds.
    public var timeoutSeconds: Double
    /// Enqueue StoreKit 2 signed transactions (`enqueue_transaction`) instead of receipts: the worker verifies each
    /// JWS locally (chain cached, one ES256 check each) and asks no one.
    public var signedTransactions: Bool
    /// With `signedTransactions`: the transactions are the fake App Store's purchases, and the worker confirms each
    /// with Get Transaction Info (`APPSTORE_CONFIRM=always`, the default when the API key is configured), so every
    /// job costs a call and a second verification. Apple's rate limit is not applied (the fake has none).
    public var confirm: Bool
    /// The fake App Store serves TLS (with a certificate made for the run, trusted through the client's loopback CA
    /// file): each connection costs a handshake.
    public var tls: Bool
    /// The client speaks HTTP/1.1 only (a connection per call in flight); otherwise HTTP/2, with prior knowledge in
    /// plain text or through ALPN with TLS.
    public var http1: Bool
    /// Connections to the fake App Store at most; nil: 64 with HTTP/2, no limit with HTTP/1.1.
    public var maxConnections: Int?
    /// Each receipt padded to about this many bytes of base64 (real receipts are several KB, stored out of line by
    /// PostgreSQL's TOAST); nil: as small as the scenario makes it (about 350 bytes, stored in the job row).
    public var receiptBytes: Int?
    /// With `--notification-flood`: the worker's NOTIFICATION_THREADS; nil keeps its default (the CPU count).
    public var notificationThreads: Int?
    /// The worker's WRITE_CONNECTIONS; nil keeps its default.
    public var writeConnections: Int?

    public init(
        receipts: Int = 20_000,
        appleLatencyMilliseconds: Int = 0,
        appleJitterMilliseconds: Int = 0,
        maxInFlight: Int? = nil,
        claimBatch: Int? = nil,
        writeBatch: Int? = nil,
        enqueueBatch: Int = 1_000,
        pickupSamples: Int = 200,
        settleSeconds: Double = 0,
        database: Database = .temporaryCluster,
        postgresPID: Int32? = nil,
        fsync: Bool = false,
        fakeAppStoreThreads: Int = 1,
        fakeAppStoreCommand: [String]? = nil,
        sqlDirectory: String,
        timeoutSeconds: Double = 900,
        signedTransactions: Bool = false,
        tls: Bool = false,
        http1: Bool = false,
        maxConnections: Int? = nil,
        confirm: Bool = false,
        receiptBytes: Int? = nil
    ) {
        self.confirm = confirm
        self.receiptBytes = receiptBytes
        self.tls = tls
        self.http1 = http1
        self.maxConnections = maxConnections
        self.receipts = receipts
        self.appleLatencyMilliseconds = appleLatencyMilliseconds
        self.appleJitterMilliseconds = appleJitterMilliseconds
        self.maxInFlight = maxInFlight ?? Self.defaultMaxInFlight(appleLatencyMilliseconds: appleLatencyMilliseconds)
        self.claimBatch = claimBatch
        self.writeBatch = writeBatch
        self.enqueueBatch = enqueueBatch
        self.pickupSamples = pickupSamples
        self.settleSeconds = settleSeconds
        self.database = database
        self.postgresPID = postgresPID
        self.fsync = fsync
        self.fakeAppStoreThreads = fakeAppStoreThreads
        self.fakeAppStoreCommand = fakeAppStoreCommand
        self.sqlDirectory = sqlDirectory
        self.timeoutSeconds = timeoutSeconds
        self.signedTransactions = signedTransactions
    }

    /// 512 when Apple answers at once; with latency, room for 3,000 calls per second (Little's law), capped to
    /// what one process's file descriptors allow (each call holds a client and a server socket here).
    public static func defaultMaxInFlight(appleLatencyMilliseconds: Int) -> Int {
        guard appleLatencyMilliseconds > 0 else { return 512 }
        return max(512, min(4_096, 3_000 * (appleLatencyMilliseconds + 100) / 1_000))
    }

    /// Problems with the numbers, each phrased with its fix.
    public func problems() -> [String] {
        var problems: [String] = []
        if receipts < 1 { problems.append("--receipts must be at least 1") }
        if !(0...100_000_000).contains(prefill) { problems.append("--prefill must be in 0…100000000") }
        if confirm && !signedTransactions { problems.append("--confirm needs --signed-transactions") }
        if receiptBytes != nil && signedTransactions {
            problems.append("--receipt-bytes pads receipts; leave it out with --signed-transactions")
        }
        if let receiptBytes, !(1...(1 << 20)).contains(receiptBytes) {
            problems.append("--receipt-bytes must be in 1…1048576 (MAX_RECEIPT_BYTES)")
        }
        if confirm && fakeAppStoreCommand != nil {
            problems.append("--confirm needs the fake App Store in this process (leave out --fake-process)")
        }
        if appleLatencyMilliseconds < 0 || appleJitterMilliseconds < 0 {
            problems.append("--apple-latency-ms and --apple-jitter-ms must not be negative")
        }
        if maxInFlight < 1 { problems.append("--max-in-flight must be at least 1") }
        if let claimBatch, claimBatch < 1 { problems.append("--claim-batch must be at least 1") }
        if let writeBatch, writeBatch < 1 { problems.append("--write-batch must be at least 1") }
        if let writeConnections, !(1...WorkerConfiguration.maxWriteConnections).contains(writeConnections) {
            problems.append("--write-connections must be 1-\(WorkerConfiguration.maxWriteConnections)")
        }
        if enqueueBatch < 1 { problems.append("--enqueue-batch must be at least 1") }
        if pickupSamples < 0 { problems.append("--pickup-samples must not be negative") }
        if !(0...3_600).contains(settleSeconds) { problems.append("--settle-seconds must be in 0…3600") }
        if fakeAppStoreThreads < 1 { problems.append("--fake-threads must be at least 1") }
        if !(timeoutSeconds > 0) { problems.append("--timeout must be positive") }
        if let maxConnections, maxConnections < 1 { problems.append("--max-connections must be at least 1") }
        if let notificationThreads, notificationThreads < 1 {
            problems.append("--notification-threads must be at least 1")
        }
        if let postgresPID, postgresPID < 1 { problems.append("--postgres-pid must be a process id") }
        return problems
    }
}
