import Crypto
import Logging
import NIOCore
import NIOPosix

/// How the fake App Store listens and misbehaves.
public struct FakeAppStoreConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port to listen on; 0 picks a free one (read it back from `FakeAppStoreServer.port`).
    public var port: Int
    /// Event loop threads.
    public var threads: Int
    /// When set, a request whose non-empty `password` differs gets 21004; a request without a password gets 21004
    /// only when its receipt holds subscriptions (entries with an expiry date), as with Apple.
    public var sharedSecret: String?
    /// Delay before every answer, in milliseconds.
    public var latencyMilliseconds: Int
    /// Extra delay, uniform in 0…jitter milliseconds, added to `latencyMilliseconds`.
    public var jitterMilliseconds: Int
    /// Random faults per request, applied when no scenario fault applies.
    public var faults: FaultRates
    /// How long a "hang" fault holds a request before closing the connection.
    public var hangSeconds: Int
    /// Larger request bodies get HTTP 413 and a closed connection.
    public var maxBodyBytes: Int
    /// Where the server logs (start, stop, connection errors at debug level).
    public var logger: Logger
    /// Serve HTTP/2 as well as HTTP/1.1 on the same port: with prior knowledge (h2c) in plain text, offered through
    /// ALPN with TLS. Off: HTTP/1.1 only (a client asking for HTTP/2 with prior knowledge then fails).
    public var http2: Bool
    /// Requests one HTTP/2 connection may carry at once (`SETTINGS_MAX_CONCURRENT_STREAMS`): high, so that tens of
    /// thousands of calls in flight fit in a few dozen connections.
    public var http2MaxConcurrentStreams: Int
    /// Serve TLS (and only TLS) with a certificate made at start; nil serves plain text.
    public var tls: FakeAppStoreTLS?

    // The App Store Server API (`/inApps/...` production, `/sandbox/inApps/...` sandbox).

    /// The chain that signs transactions and notifications; nil generates one at start. Its root is what a worker
    /// must trust (`FakeAppStoreServer.rootCertificateDER`, `rootCertificatePath`).
    public var signingChain: SigningChain?
    /// When set, the signing chain's root certificate (DER) is written to this file at start, for
    /// `APPSTORE_ROOT_CERTIFICATES`.
    public var rootCertificatePath: String?
    /// The In-App Purchase keys whose tokens the fake accepts, by key id (the JWT's `kid`): their public halves.
    /// Empty: every App Store Server API request gets 401.
    public var apiKeys: [String: P256.Signing.PublicKey]
    /// When set, a token's `iss` must equal it.
    public var apiIssuerID: String?
    /// Transactions per history page and notifications per notification history page. Apple sends 20; the fake's
    /// default is small so that paging is exercised.
    public var apiPageSize: Int
    /// Requests per second per (bundle id, operation) the fake answers before it answers 429, as Apple does; nil
    /// sets no limit.
    public var apiRateLimit: Int?
    /// Random App Store Server API faults per request.
    public var apiFaults: ServerAPIFaultRates
    /// Look Up Order ID answers with the order's purchases of every app, not only the token's (an e-mailed receipt
    /// can list several apps): what a client must not print as its own. Off by default.
    public var orderLookupAcrossApps = false

    // The App Store Connect API's sales reports (`GET /v1/salesReports`, `FakeSalesReports`).

    /// The App Store Connect API keys whose tokens the fake accepts (ES256, `aud` appstoreconnect-v1, no `bid`, at
    /// most 20 minutes), by key id: their public halves. Empty: every sales report request gets 401.
    public var connectAPIKeys: [String: P256.Signing.PublicKey]
    /// When set, a sales report token's `iss` must equal it.
    public var connectIssuerID: String?
    /// The vendor number the fake's reports are filed under; another gets 403.
    public var vendorNumber: String

    // App Store Server Notifications V2.

    /// Where the fake sends notifications (`FakeAppStoreServer.deliver`, `POST /fake/notifications`), as Apple sends
    /// them to the URL set in App Store Connect; nil: only where a request names a URL.
    public var notificationURL: String?
    /// Connect and total timeout of one attempt to send a notification.
    public var notificationTimeoutMilliseconds: Int

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        threads: Int = System.coreCount,
        sharedSecret: String? = nil,
        latencyMilliseconds: Int = 0,
        jitterMilliseconds: Int = 0,
        faults: FaultRates = .none,
        hangSeconds: Int = 120,
        maxBodyBytes: Int = 16 << 20,
        logger: Logger = Logger(label: "fake-appstore"),
        signingChain: SigningChain? = nil,
        rootCertificatePath: String? = nil,
        apiKeys: [String: P256.Signing.PublicKey] = [:],
        apiIssuerID: String? = nil,
        apiPageSize: Int = 2,
        apiRateLimit: Int? = nil,
        apiFaults: ServerAPIFaultRates = .none,
        notificationURL: String? = nil,
        notificationTimeoutMilliseconds: Int = 10_000,
        http2: Bool = true,
        http2MaxConcurrentStreams: Int = 1_000,
        tls: FakeAppStoreTLS? = nil,
        connectAPIKeys: [String: P256.Signing.PublicKey] = [:],
        connectIssuerID: String? = nil,
        vendorNumber: String = "80012345"
    ) {
        self.connectAPIKeys = connectAPIKeys
        self.connectIssuerID = connectIssuerID
        self.vendorNumber = vendorNumber
        self.http2 = http2
        self.http2MaxConcurrentStreams = http2MaxConcurrentStreams
        self.tls = tls
        self.host = host
        self.port = port
        self.threads = threads
        self.sharedSecret = sharedSecret
        self.latencyMilliseconds = latencyMilliseconds
        self.jitterMilliseconds = jitterMilliseconds
        self.faults = faults
        self.hangSeconds = hangSeconds
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
        self.signingChain = signingChain
        self.rootCertificatePath = rootCertificatePath
        self.apiKeys = apiKeys
        self.apiIssuerID = apiIssuerID
        self.apiPageSize = apiPageSize
        self.apiRateLimit = apiRateLimit
        self.apiFaults = apiFaults
        self.notificationURL = notificationURL
        self.notificationTimeoutMilliseconds = notificationTimeoutMilliseconds
    }
}
