import Dispatch
import Foundation
import Synchronization

/// What the event loops share for the App Store Server API: the purchases, the token check, the faults to inject,
/// Apple's rate limit as the fake enforces it, the statistics, and the notification sender. Each mutable part behind
/// its own `Mutex`.
final class ServerAPIState: Sendable {
    let store: PurchaseStore
    let chain: SigningChain
    let authorization: ServerAPIAuthorization
    /// The App Store Connect API's sales reports and their token check (`GET /v1/salesReports`).
    let salesReports: FakeSalesReports
    let connectAuthorization: ServerAPIAuthorization
    let pageSize: Int
    let rateLimit: Int?
    /// `FakeAppStoreConfiguration.orderLookupAcrossApps`.
    let orderLookupAcrossApps: Bool
    /// Where notifications are sent unless a request names another URL.
    let notificationURL: String?
    let sender: NotificationSender
    private let queuedFaults = Mutex<[ServerAPIFault]>([])
    private let faultRates: Mutex<ServerAPIFaultRates>
    private let stats = Mutex(ServerAPIStats())
    private let consumptionAnswers = Mutex<[FakeConsumptionAnswer]>([])
    /// Request a Test Notification's tokens, each with its TEST notification's notificationUUID.
    private let testTokens = Mutex<[String: String]>([:])
    /// Per "bundle id operation", the arrivals of the last second, for `rateLimit`.
    private let recent = Mutex<[String: [Double]]>([:])
    private let startedNanoseconds = DispatchTime.now().uptimeNanoseconds

    init(_ configuration: FakeAppStoreConfiguration, chain: SigningChain) throws(FakeAppStoreError) {
        do {
            store = PurchaseStore(signer: try JWSSigner(chain: chain))
        } catch {
            throw FakeAppStoreError(.signing, "cannot sign with the chain: \(error)")
        }
        self.chain = chain
        authorization = ServerAPIAuthorization(keys: configuration.apiKeys, issuerID: configuration.apiIssuerID)
        salesReports = FakeSalesReports(store: store, vendorNumber: configuration.vendorNumber)
        connectAuthorization = ServerAPIAuthorization(
            keys: configuration.connectAPIKeys, issuerID: configuration.connectIssuerID, requiresBundleID: false,
            maximumLifetimeSeconds: 1200
        )
        pageSize = configuration.apiPageSize
        rateLimit = configuration.apiRateLimit
        orderLookupAcrossApps = configuration.orderLookupAcrossApps
        faultRates = Mutex(configuration.apiFaults)
        notificationURL = configuration.notificationURL
        sender = NotificationSender(timeoutMilliseconds: configuration.notificationTimeoutMilliseconds)
    }

    /// Sends `notification` to `url` and records the attempt; `completion` gets the notification as recorded, on the
    /// sender's thread.
    func deliver(
        _ notification: PurchaseStore.Notification, to url: String,
        completion: @escaping @Sendable (PurchaseStore.Notification) -> Void
    ) {
        let attemptDate = PurchaseStore.milliseconds(Date())
        sender.send(notification.signedPayload, to: url) { [store] result in
            completion(store.recordAttempt(.init(attemptDate: attemptDate, result: result), of: notification))
        }
    }

    /// Remembers which TEST notification `token` stands for (Get Test Notification Status).
    func recordTestToken(_ token: String, notificationUUID: String) {
        testTokens.withLock { $0[token] = notificationUUID }
    }

    /// The notificationUUID of the TEST notification `token` stands for.
    func testNotificationUUID(token: String) -> String? {
        testTokens.withLock { $0[token] }
    }

    /// Seconds since the server started (monotonic).
    var uptime: Double {
        Double(DispatchTime.now().uptimeNanoseconds - startedNanoseconds) / 1e9
    }

    func recordConsumption(_ answer: FakeConsumptionAnswer) {
        consumptionAnswers.withLock { $0.append(answer) }
    }

    var receivedConsumptionAnswers: [FakeConsumptionAnswer] {
        consumptionAnswers.withLock { $0 }
    }

    func enqueue(_ faults: [ServerAPIFault]) {
        queuedFaults.withLock { $0 += faults }
    }

    func setFaultRates(_ rates: ServerAPIFaultRates) {
        faultRates.withLock { $0 = rates }
    }

    /// The next queued fault, else a random one, else nil.
    func nextFault<Generator: RandomNumberGenerator>(using generator: inout Generator) -> ServerAPIFault? {
        if let queued = queuedFaults.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return queued }
        let rates = faultRates.withLock { $0 }
        return rates.draw(using: &generator)
    }

    /// Counts a request of `operation` for `bundleId` arriving at `now` (uptime seconds); the seconds until one more
    /// would be allowed when `rateLimit` requests already arrived within the last second, else nil.
    func overLimit(bundleId: String, operation: String, now: Double) -> Double? {
        guard let rateLimit else { return nil }
        return recent.withLock { recent in
            var times = recent["\(bundleId) \(operation)", default: []]
            times.removeAll { now - $0 >= 1 }
            defer { recent["\(bundleId) \(operation)"] = times }
            guard times.count < rateLimit else { return max(0.001, times[0] + 1 - now) }
            times.append(now)
            return nil
        }
    }

    func record(environment: String, operation: String, answer: String, arrival: Double) {
        stats.withLock { $0.record(environment: environment, operation: operation, answer: answer, arrival: arrival) }
    }

    var currentStats: ServerAPIStats {
        stats.withLock { $0 }
    }

    func resetStats() {
        stats.withLock { $0 = ServerAPIStats() }
    }
}
