/// How to reach Apple's App Store Server API, and how fast.
public struct ServerAPIConfiguration: Sendable {
    /// The In-App Purchase key's id in App Store Connect (`APPSTORE_KEY_ID`): the tokens' `kid`.
    public var keyID: String
    /// The team's issuer id from App Store Connect (`APPSTORE_ISSUER_ID`, a UUID): the tokens' `iss`.
    public var issuerID: String
    /// The key that signs the tokens (`APPSTORE_PRIVATE_KEY_FILE`). Never printed.
    public var privateKey: ServerAPIPrivateKey
    /// The production base URL (`APPSTORE_API_URL`); paths such as `/inApps/v1/...` are appended to it.
    public var productionURL: String
    /// The sandbox base URL (`APPSTORE_SANDBOX_API_URL`).
    public var sandboxURL: String
    /// Total time allowed for one HTTP call, connection included (pacing's wait not counted).
    public var timeoutSeconds: Double
    /// Time allowed to connect.
    public var connectTimeoutSeconds: Double
    /// The largest answer read. A history page holds at most 20 signed transactions of a few KiB each.
    public var maxResponseBytes: Int
    /// How long a token is valid (its `exp` minus its `iat`); Apple accepts at most 3600 s. A token is reused until
    /// a fifth of this (at most 60 s) before it expires.
    public var tokenLifetimeSeconds: Double
    /// Get Transaction History pages read for one call at most; the rest can be asked for with the revision the
    /// result returns.
    public var maxHistoryPages: Int
    /// Requests per second per bundle id and operation in production. Operations missing here use Apple's published
    /// limits (`ServerAPIOperation.appleRequestsPerSecond`).
    public var requestsPerSecond: [ServerAPIOperation: Double]
    /// The same in the sandbox, paced on its own. Operations missing here use Apple's sandbox limits, a tenth of
    /// production's (`appleRequestsPerSecond(in: .sandbox)`): 5 a second, Look Up Order ID and Get Refund History 1.
    public var sandboxRequestsPerSecond: [ServerAPIOperation: Double]
    /// Requests one (bundle id, operation) may send at once after a quiet spell; beyond it they are spaced at its
    /// rate. 1 spaces every request evenly.
    public var burst: Int
    /// A request that pacing would hold longer than this is not queued: it fails as retryable (cause
    /// `rate_limited`), with the wait as its Retry-After.
    public var maxPacingDelaySeconds: Double

    public static let appleProductionURL = "https://api.storekit.apple.com"
    public static let appleSandboxURL = "https://api.storekit-sandbox.apple.com"

    public init(
        keyID: String,
        issuerID: String,
        privateKey: ServerAPIPrivateKey,
        productionURL: String = ServerAPIConfiguration.appleProductionURL,
        sandboxURL: String = ServerAPIConfiguration.appleSandboxURL,
        timeoutSeconds: Double = 15,
        connectTimeoutSeconds: Double = 5,
        maxResponseBytes: Int = 4 << 20,
        tokenLifetimeSeconds: Double = 600,
        maxHistoryPages: Int = 50,
        requestsPerSecond: [ServerAPIOperation: Double] = [:],
        sandboxRequestsPerSecond: [ServerAPIOperation: Double] = [:],
        burst: Int = 1,
        maxPacingDelaySeconds: Double = 30
    ) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.privateKey = privateKey
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.timeoutSeconds = timeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.maxResponseBytes = maxResponseBytes
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.maxHistoryPages = maxHistoryPages
        self.requestsPerSecond = requestsPerSecond
        self.sandboxRequestsPerSecond = sandboxRequestsPerSecond
        self.burst = burst
        self.maxPacingDelaySeconds = maxPacingDelaySeconds
    }

    public func url(for environment: AppStoreEndpoint) -> String {
        environment == .production ? productionURL : sandboxURL
    }

    /// The pace for `operation` in production: the configured rate, else Apple's limit.
    public func requestsPerSecond(for operation: ServerAPIOperation) -> Double {
        requestsPerSecond(for: operation, in: .production)
    }

    /// The pace for `operation` in `environment`: the configured rate, else Apple's limit there.
    public func requestsPerSecond(for operation: ServerAPIOperation, in environment: AppStoreEndpoint) -> Double {
        let configured = environment == .production ? requestsPerSecond : sandboxRequestsPerSecond
        return configured[operation] ?? operation.appleRequestsPerSecond(in: environment)
    }

    /// HTTPS for Apple, plain http only for loopback (tests, the fake App Store); ids present; limits in range.
    public func validate() throws(AppStoreConfigurationError) {
        try AppStoreConfiguration.checkURL(productionURL, setting: "APPSTORE_API_URL")
        try AppStoreConfiguration.checkURL(sandboxURL, setting: "APPSTORE_SANDBOX_API_URL")
        if keyID.isEmpty {
            throw AppStoreConfigurationError("APPSTORE_KEY_ID is empty: set it to the In-App Purchase key's id")
        }
        if issuerID.isEmpty {
            throw AppStoreConfigurationError(
                "APPSTORE_ISSUER_ID is empty: set it to the issuer id shown above the keys in App Store Connect"
            )
        }
        if !(timeoutSeconds > 0) || !(connectTimeoutSeconds > 0) {
            throw AppStoreConfigurationError("the App Store Server API timeouts must be positive numbers of seconds")
        }
        if !(tokenLifetimeSeconds >= 60 && tokenLifetimeSeconds <= 3600) {
            throw AppStoreConfigurationError(
                "the token lifetime must be 60 to 3600 seconds (Apple refuses longer), got \(tokenLifetimeSeconds)"
            )
        }
        if maxHistoryPages < 1 || maxResponseBytes < 1 || burst < 1 || !(maxPacingDelaySeconds >= 0) {
            throw AppStoreConfigurationError(
                "maxHistoryPages, maxResponseBytes and burst must be at least 1, maxPacingDelaySeconds not negative"
            )
        }
        for environment in [AppStoreEndpoint.production, .sandbox] {
            for operation in ServerAPIOperation.allCases
            where !(requestsPerSecond(for: operation, in: environment) > 0) {
                throw AppStoreConfigurationError(
                    "the \(environment.rawValue) request rate for \(operation.rawValue) must be above 0"
                )
            }
        }
    }
}

extension ServerAPIConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Everything but the key, which shows as the file it came from.
    public var description: String {
        "ServerAPIConfiguration(keyID: \(keyID), issuerID: \(issuerID), privateKey: \(privateKey), "
            + "productionURL: \(productionURL), sandboxURL: \(sandboxURL), timeoutSeconds: \(timeoutSeconds))"
    }

    public var debugDescription: String { description }
}
