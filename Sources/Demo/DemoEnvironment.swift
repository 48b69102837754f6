import AppStoreClient
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import LocalPostgres
import Logging
import PostgresClient
import ReceiptQueue

/// What the demo starts, and stops again whatever happens: PostgreSQL (a temporary cluster unless DATABASE_URL is
/// set), the fake App Store, and the libcurl transport the worker reaches it through. `tearDown()` stops whatever
/// was started, so a demo that fails half way leaves nothing behind.
final class DemoEnvironment {
    /// The shared secret on both sides: the fake App Store checks it, the worker sends it.
    static let sharedSecret = "demo-secret"
    static let databaseName = "receipt_demo"
    /// The App Store Server API key the fake accepts and the worker signs with (refund requests), made per run.
    let apiKey = P256.Signing.PrivateKey()
    static let apiKeyID = "DEMOKEY001"
    static let apiIssuerID = "demo-issuer"

    private let openConnection: (String) throws -> PostgresConnection

    private(set) var cluster: LocalPostgresCluster?
    private(set) var databaseURL = ""
    private var fake: FakeAppStoreServer?
    private var transport: CurlMultiTransport?
    private var connections: [PostgresConnection] = []

    /// `connect` opens a connection, turning a failure into the error to show.
    init(connect: @escaping (String) throws -> PostgresConnection) {
        openConnection = connect
    }

    /// Uses `externalURL` when given; otherwise starts a temporary cluster and creates the demo's database in it.
    func startPostgres(externalURL: String?) throws {
        if let externalURL {
            databaseURL = externalURL
            return
        }
        let started: LocalPostgresCluster
        do {
            started = try LocalPostgresCluster.start()
        } catch let error as LocalPostgresError {
            throw DemoError(
                .postgres,
                "cannot start a temporary PostgreSQL: \(error). "
                    + "Or set DATABASE_URL to run the demo in an existing database."
            )
        }
        cluster = started
        databaseURL = try started.createDatabase(Self.databaseName)
    }

    /// A connection closed again by `tearDown()`.
    func connect() throws -> PostgresConnection {
        let connection = try openConnection(databaseURL)
        connections.append(connection)
        return connection
    }

    /// Starts the fake App Store on a free loopback port, answering after `latencyMs` plus up to `jitterMs`, and an
    /// App Store client pointed at it.
    func startFakeAppStore(
        latencyMs: Int, jitterMs: Int, logger: Logger
    ) throws -> (FakeAppStoreServer, AppStoreClient) {
        let server: FakeAppStoreServer
        do {
            server = try FakeAppStoreServer.start(
                FakeAppStoreConfiguration(
                    port: 0, threads: 1, sharedSecret: Self.sharedSecret, latencyMilliseconds: latencyMs,
                    jitterMilliseconds: jitterMs, logger: logger, apiKeys: [Self.apiKeyID: apiKey.publicKey],
                    apiIssuerID: Self.apiIssuerID
                )
            )
        } catch {
            throw DemoError(.fakeAppStore, "the fake App Store could not start: \(error)")
        }
        fake = server
        let transport = try CurlMultiTransport()
        self.transport = transport
        let client = try AppStoreClient(
            configuration: AppStoreConfiguration(
                productionURL: server.productionURL, sandboxURL: server.sandboxURL, sharedSecret: Self.sharedSecret,
                timeoutSeconds: 5, connectTimeoutSeconds: 1
            ),
            transport: transport
        )
        return (server, client)
    }

    /// An App Store Server API client of the fake `startFakeAppStore` started, over its transport.
    func serverAPIClient() throws -> ServerAPIClient {
        guard let fake, let transport else { throw DemoError(.fakeAppStore, "the fake App Store is not running") }
        return try ServerAPIClient(
            configuration: ServerAPIConfiguration(
                keyID: Self.apiKeyID, issuerID: Self.apiIssuerID,
                privateKey: try ServerAPIPrivateKey(pemRepresentation: apiKey.pemRepresentation),
                productionURL: fake.apiProductionURL, sandboxURL: fake.apiSandboxURL, timeoutSeconds: 5,
                connectTimeoutSeconds: 1
            ),
            transport: transport
        )
    }

    /// Stops what was started, newest first; the temporary cluster's directory is deleted. Returns what it stopped,
    /// for the closing line. Idempotent.
    @discardableResult
    func tearDown() -> [String] {
        var stopped: [String] = []
        transport?.shutdown()
        transport = nil
        if let fake {
            fake.stop()
            stopped.append("fake App Store stopped")
        }
        fake = nil
        for connection in connections { connection.close() }
        connections = []
        if let cluster {
            cluster.stop()
            stopped.append("PostgreSQL stopped and \(cluster.dataDirectory) removed")
        }
        cluster = nil
        return stopped
    }
}
