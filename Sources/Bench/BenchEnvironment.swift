import AppStoreClient
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import LocalPostgres
import Logging
import PostgresClient
import ReceiptQueue

/// What a run starts, and stops again whatever happens: PostgreSQL (a temporary cluster, a scratch database, or
/// the database the user named), the fake App Store in this process, and the libcurl transport to it.
final class BenchEnvironment {
    static let sharedSecret = "bench-secret"
    static let bundleId = "com.example.bench"

    private(set) var databaseURL = ""
    private(set) var databaseDescription = ""
    /// The temporary cluster's postmaster, to read PostgreSQL's CPU time.
    private(set) var postmasterPID: Int32?
    private var cluster: LocalPostgresCluster?
    private var scratch: (serverURL: String, name: String)?
    private(set) var fake: FakeAppStoreServer?
    private(set) var fakeProcess: FakeAppStoreProcess?
    private(set) var transport: CurlMultiTransport?
    /// The transport `fakeStats` and `resetFakeStats` use (made on first use).
    private var statsClient: CurlMultiTransport?
    /// The fake App Store's certificate authority (PEM) with TLS, removed at tear-down.
    private var caFile: String?

    /// Starts or creates the database, applies the migrations and registers the bench app.
    func startDatabase(
        _ choice: BenchConfiguration.Database, fsync: Bool, sqlDirectory: String, settings: [String: String] = [:]
    ) throws {
        switch choice {
        case .temporaryCluster:
            let started: LocalPostgresCluster
            do {
                started = try LocalPostgresCluster.start(options: .init(fsync: fsync, extraSettings: settings))
            } catch {
                throw BenchError(
                    "cannot start a temporary PostgreSQL: \(error). Install the server (apt-get install -y "
                        + "postgresql) or set DATABASE_URL with --scratch-database NAME"
                )
            }
            cluster = started
            databaseURL = try started.createDatabase("receipt_bench")
            postmasterPID = ProcessTreeCPU.postmaster(dataDirectory: started.dataDirectory)
            databaseDescription = "temporary cluster, \(fsync ? "fsync on" : "fsync=off synchronous_commit=off")"
                + settings.sorted { $0.key < $1.key }.map { ", \($0.key)=\($0.value)" }.joined()
        case .existing(let url):
            databaseURL = url
            databaseDescription = "DATABASE_URL as given (settings as configured there)"
        case .scratch(let serverURL, let name):
            let admin = try BenchConnection.open(serverURL)
            defer { admin.close() }
            try admin.execute("CREATE DATABASE \(quoteIdentifier(name))")
            scratch = (serverURL, name)
            databaseURL = ConnectionString.replacingDatabase(in: serverURL, with: name)
            databaseDescription = "scratch database \(name) on DATABASE_URL's server (dropped afterwards)"
        }
        let connection = try BenchConnection.open(databaseURL)
        defer { connection.close() }
        _ = try Migrator(directory: sqlDirectory).migrate(connection)
        try JobStore(connection: connection).registerApps([Self.bundleId])
    }

    /// Starts the fake App Store on a free loopback port, with TLS when `tls`, and a client reaching it through one
    /// libcurl transport sized for `connections` calls in flight (HTTP/1.1 only when `http1`, at most
    /// `maxConnections` connections).
    /// With `processCommand`, the fake runs in a child process started by that command. `faults` (a hang held
    /// `hangSeconds`) apply to the fake in this process; the client gives up on a call after `timeoutSeconds`
    /// (by default the slowest answer and 30 s).
    func startAppStore(
        latencyMilliseconds: Int, jitterMilliseconds: Int, threads: Int, connections: Int, tls: Bool, http1: Bool,
        maxConnections: Int?, processCommand: [String]?, apiKey: P256.Signing.PublicKey? = nil,
        faults: FaultRates = .none, hangSeconds: Int = 120, timeoutSeconds: Double? = nil, logger: Logger
    ) throws -> AppStoreClient {
        let productionURL: String
        let sandboxURL: String
        let caFile = tls ? FileManager.default.temporaryDirectory
            .appendingPathComponent("bench-fake-appstore-ca-\(UInt32.random(in: 0...UInt32.max)).pem").path : nil
        self.caFile = caFile
        if let processCommand {
            let child = try FakeAppStoreProcess(
                command: processCommand, latencyMilliseconds: latencyMilliseconds,
                jitterMilliseconds: jitterMilliseconds, threads: threads, sharedSecret: Self.sharedSecret,
                tlsCAFile: caFile
            )
            fakeProcess = child
            (productionURL, sandboxURL) = (child.productionURL, child.sandboxURL)
        } else {
            let server = try FakeAppStoreServer.start(
                FakeAppStoreConfiguration(
                    port: 0, threads: threads, sharedSecret: Self.sharedSecret,
                    latencyMilliseconds: latencyMilliseconds, jitterMilliseconds: jitterMilliseconds, faults: faults,
                    hangSeconds: hangSeconds, logger: logger,
                    apiKeys: apiKey.map { [Self.apiKeyID: $0] } ?? [:], apiIssuerID: Self.apiIssuerID,
                    tls: caFile.map { FakeAppStoreTLS(authorityCertificatePath: $0) }
                )
            )
            fake = server
            (productionURL, sandboxURL) = (server.productionURL, server.sandboxURL)
        }
        var configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: connections, to: [productionURL, sandboxURL],
            httpVersion: http1 ? .http1_1 : .http2WithLoopbackCleartext,
            maxHostConnections: maxConnections
        )
        configuration.loopbackCAFile = caFile
        let transport = try CurlMultiTransport(configuration: configuration)
        self.transport = transport
        let slowest = Double(latencyMilliseconds + jitterMilliseconds) / 1000
        return try AppStoreClient(
            configuration: AppStoreConfiguration(
                productionURL: productionURL, sandboxURL: sandboxURL, sharedSecret: Self.sharedSecret,
                timeoutSeconds: timeoutSeconds ?? slowest + 30, connectTimeoutSeconds: 10
            ),
            transport: transport
        )
    }

    /// The fake App Store's statistics: from the server in this process, or its process's `GET /stats`; nil when
    /// that cannot be read (the run's other figures do not depend on it).
    func fakeStats() -> FakeAppStoreStats? {
        if let fake { return fake.stats() }
        guard let url = fakeProcess?.statsURL, let transport = statsTransport() else { return nil }
        let request = HTTPRequest(
            url: url, method: .get, connectTimeoutMilliseconds: Self.statsTimeoutMilliseconds,
            totalTimeoutMilliseconds: Self.statsTimeoutMilliseconds
        )
        guard case .success(let response) = transport.send(request), response.status == 200 else { return nil }
        return try? JSONDecoder().decode(FakeAppStoreStats.self, from: Data(response.body))
    }

    /// Starts the fake App Store's statistics afresh (`POST /stats/reset` for its process).
    func resetFakeStats() {
        if let fake {
            fake.resetStats()
        } else if let url = fakeProcess?.statsURL, let transport = statsTransport() {
            _ = transport.send(HTTPRequest(
                url: url + "/reset", method: .post, body: [UInt8](),
                connectTimeoutMilliseconds: Self.statsTimeoutMilliseconds,
                totalTimeoutMilliseconds: Self.statsTimeoutMilliseconds
            ))
        }
    }

    /// How long a request for the fake's statistics may take: the run's figures do not wait on them.
    private static let statsTimeoutMilliseconds = 2_000

    /// A transport of its own for the fake's statistics, so that the calls' transport counts only the run's calls.
    private func statsTransport() -> CurlMultiTransport? {
        if let statsClient { return statsClient }
        var configuration = CurlMultiTransport.Configuration(maxTotalConnections: 1)
        configuration.loopbackCAFile = caFile
        statsClient = try? CurlMultiTransport(configuration: configuration)
        return statsClient
    }

    static let apiKeyID = "BENCHKEY01"
    static let apiIssuerID = "bench-issuer"

    /// An App Store Server API client of the in-process fake, over the transport `startAppStore` made, signing its
    /// tokens with `privateKey`. Unpaced: the fake has no rate limit, and the run measures the work per call.
    func serverAPIClient(privateKey: P256.Signing.PrivateKey) throws -> ServerAPIClient {
        guard let fake, let transport else { throw BenchError("the App Store Server API needs the in-process fake") }
        let unpaced = Dictionary(uniqueKeysWithValues: ServerAPIOperation.allCases.map { ($0, 1e9) })
        return try ServerAPIClient(
            configuration: ServerAPIConfiguration(
                keyID: Self.apiKeyID, issuerID: Self.apiIssuerID,
                privateKey: try ServerAPIPrivateKey(pemRepresentation: privateKey.pemRepresentation),
                productionURL: fake.apiProductionURL, sandboxURL: fake.apiSandboxURL, timeoutSeconds: 60,
                connectTimeoutSeconds: 10, requestsPerSecond: unpaced, sandboxRequestsPerSecond: unpaced,
                burst: 1_000_000
            ),
            transport: transport
        )
    }

    /// Stops everything started, newest first; idempotent.
    func tearDown() {
        transport?.shutdown()
        transport = nil
        statsClient?.shutdown()
        statsClient = nil
        fake?.stop()
        fake = nil
        fakeProcess?.stop()
        fakeProcess = nil
        if let caFile { try? FileManager.default.removeItem(atPath: caFile) }
        caFile = nil
        if let scratch, let admin = try? BenchConnection.open(scratch.serverURL) {
            try? admin.execute("DROP DATABASE IF EXISTS \(quoteIdentifier(scratch.name)) WITH (FORCE)")
            admin.close()
        }
        scratch = nil
        cluster?.stop()
        cluster = nil
    }
}

/// A benchmark that cannot run, with what to do about it.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
