import Synchronization

/// What the event loops share: settings that change at run time, the statistics, and how many requests each
/// faulting scenario receipt has had. Every mutable part sits behind its own `Mutex`, held only to read or bump.
final class FakeAppStoreState: Sendable {
    /// The settings that `FakeAppStoreServer.setFaults` and `setLatency` change while the server runs.
    struct Settings: Sendable {
        var faults: FaultRates
        var latencyMilliseconds: Int
        var jitterMilliseconds: Int
    }

    /// The App Store Server API's purchases, token check, faults and statistics.
    let serverAPI: ServerAPIState
    let sharedSecret: String?
    let hangSeconds: Int
    let maxBodyBytes: Int
    private let settings: Mutex<Settings>
    private let stats = Mutex(FakeAppStoreStats())
    private let connections = Mutex(FakeAppStoreConnections())
    /// Requests seen per scenario receipt that lists faults, keyed by its `receipt-data` text.
    private let scenarioRequests = Mutex([String: Int]())
    /// The `X-Fake-Refuse` tokens whose HTTP/2 stream has been refused once.
    private let refusedTokens = Mutex(Set<String>())

    init(_ configuration: FakeAppStoreConfiguration, serverAPI: ServerAPIState) {
        self.serverAPI = serverAPI
        sharedSecret = configuration.sharedSecret
        hangSeconds = configuration.hangSeconds
        maxBodyBytes = configuration.maxBodyBytes
        settings = Mutex(
            Settings(
                faults: configuration.faults,
                latencyMilliseconds: configuration.latencyMilliseconds,
                jitterMilliseconds: configuration.jitterMilliseconds
            )
        )
    }

    /// Whether this is the first request with `token` (`X-Fake-Refuse`), the one to refuse; remembers it.
    func firstRefusal(of token: String) -> Bool {
        refusedTokens.withLock { $0.insert(token).inserted }
    }

    var currentSettings: Settings {
        settings.withLock { $0 }
    }

    func setFaults(_ rates: FaultRates) {
        settings.withLock { $0.faults = rates }
    }

    func setLatency(milliseconds: Int, jitter: Int) {
        settings.withLock {
            $0.latencyMilliseconds = max(0, milliseconds)
            $0.jitterMilliseconds = max(0, jitter)
        }
    }

    /// Counts one more request carrying `receiptData` and returns the fault its scenario asks for at that position,
    /// or nil once the faults are used up.
    func nextScenarioFault(receiptData: String, faults: [ScenarioReceipt.Fault]) -> ScenarioReceipt.Fault? {
        let index = scenarioRequests.withLock { seen in
            let index = seen[receiptData, default: 0]
            seen[receiptData] = index + 1
            return index
        }
        return index < faults.count ? faults[index] : nil
    }

    func record(endpoint: Endpoint, answer: String, arrivedAtMs: Int64) {
        stats.withLock { $0.record(endpoint: endpoint.statsKey, answer: answer, arrivedAtMs: arrivedAtMs) }
    }

    func recordDelayedAnswer(lateMilliseconds: Double) {
        stats.withLock { $0.recordDelayedAnswer(lateMilliseconds: lateMilliseconds) }
    }

    var currentStats: FakeAppStoreStats {
        stats.withLock { $0 }
    }

    func connectionOpened() {
        connections.withLock {
            $0.accepted += 1
            $0.open += 1
            $0.peakOpen = max($0.peakOpen, $0.open)
        }
    }

    func connectionClosed() {
        connections.withLock { $0.open -= 1 }
    }

    /// Counts a connection's protocol once its first bytes tell.
    func connectionSpeaks(http2: Bool) {
        connections.withLock {
            if http2 { $0.http2 += 1 } else { $0.http1 += 1 }
        }
    }

    var currentConnections: FakeAppStoreConnections {
        connections.withLock { $0 }
    }

    func resetStats() {
        stats.withLock { $0 = FakeAppStoreStats() }
    }
}
