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
        logger: Logger = Logger(label: "fake-appstore")
    ) {
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
    }
}
