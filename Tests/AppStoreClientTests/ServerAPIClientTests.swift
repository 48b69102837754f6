import AppStoreModel
import AppStoreSignedData
import Crypto
import CurlHTTP
import Dispatch
import FakeAppStore
import Foundation
import Synchronization
import Testing
import X509

@testable import AppStoreClient

/// The fake App Store on loopback, a libcurl transport, and a client whose key the fake trusts.
struct ServerAPIWorld {
    static let bundle = "com.example.app"
    let server: FakeAppStoreServer
    let transport: CurlMultiTransport
    let client: ServerAPIClient

    init(
        fake: (inout FakeAppStoreConfiguration) -> Void = { _ in },
        client change: (inout ServerAPIConfiguration) -> Void = { _ in },
        clientKey: P256.Signing.PrivateKey? = nil
    ) throws {
        let key = P256.Signing.PrivateKey()
        var fakeConfiguration = FakeAppStoreConfiguration(threads: 1, apiKeys: ["KEY1234567": key.publicKey])
        fake(&fakeConfiguration)
        server = try FakeAppStoreServer.start(fakeConfiguration)
        var configuration = ServerAPIConfiguration(
            keyID: "KEY1234567", issuerID: "57246542-96fe-1a63-e053-0824d011072a",
            privateKey: try ServerAPIPrivateKey(pemRepresentation: (clientKey ?? key).pemRepresentation),
            productionURL: server.apiProductionURL, sandboxURL: server.apiSandboxURL, timeoutSeconds: 30
        )
        change(&configuration)
        transport = try CurlMultiTransport()
        client = try ServerAPIClient(configuration: configuration, transport: transport)
    }

    func stop() {
        transport.shutdown()
        server.stop()
    }

    /// The transaction signed in `jws`, verified under the fake's root.
    func transaction(_ jws: String) throws -> SignedTransaction {
        let root = try Certificate(derEncoded: try server.rootCertificateDER())
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [root], onlineChecks: false))
        return try SignedTransaction(payload: try verifier.verify(jws).payload)
    }
}

@Suite("App Store Server API client against the fake App Store, over libcurl")
struct ServerAPIClientTests {
    static let bundle = ServerAPIWorld.bundle

    @Test("every endpoint, in production: transaction info, history, order lookup, notification history")
    func endpoints() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let sub = "Auto-Renewable Subscription"
        let first = try world.server.purchases.add([
            FakePurchase(bundleId: Self.bundle, productId: "coins", orderId: "MK5TTTVWJH"),
            FakePurchase(bundleId: Self.bundle, productId: "pro", type: sub),
        ])
        let renewals = try world.server.purchases.add((0..<4).map { _ in
            FakePurchase(
                bundleId: Self.bundle, productId: "pro", originalTransactionId: first[1].transactionId, type: sub
            )
        })

        let (info, infoCalls) = world.client.transactionInfo(
            transactionId: first[0].transactionId, bundleId: Self.bundle
        )
        guard case .success(let jws, environment: .production) = info else { throw Unexpected() }
        #expect(try world.transaction(jws).transactionId == first[0].transactionId)
        #expect(infoCalls.map(\.outcome) == ["http_200"])

        let (history, historyCalls) = world.client.transactionHistory(
            transactionId: renewals[2].transactionId, bundleId: Self.bundle
        )
        let read = try #require(history.value)
        #expect(read.signedTransactions == [first[1].signedTransaction] + renewals.map(\.signedTransaction))
        #expect(read.pages == 3)
        #expect(read.isComplete)
        #expect(historyCalls.count == 3)

        let (order, _) = world.client.lookUpOrder(orderId: "MK5TTTVWJH", bundleId: Self.bundle)
        #expect(order.value == [first[0].signedTransaction])

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let request = NotificationHistoryRequest(startDate: now - 60_000, endDate: now + 60_000)
        var payloads: [String] = []
        var token: String?
        var pages = 0
        repeat {
            let (page, _) = world.client.notificationHistory(
                request, paginationToken: token, bundleId: Self.bundle, environment: .production
            )
            let read = try #require(page.value)
            payloads += read.notifications.compactMap(\.signedPayload)
            token = read.hasMore ? read.paginationToken : nil
            pages += 1
        } while token != nil && pages < 10
        #expect(payloads.count == 6)
        #expect(pages == 3)
        let stats = world.server.apiStats()
        #expect(stats.requests["production.transaction_history"] == 3)
        #expect(stats.requests["sandbox.transaction_info"] == nil)
    }

    @Test("a sandbox purchase: production answers 4040010, the sandbox once, and the result says sandbox")
    func sandboxHop() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([
            FakePurchase(environment: "Sandbox", bundleId: Self.bundle, productId: "coins", orderId: "SANDBOX1"),
        ])
        let (info, calls) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        guard case .success(let jws, environment: .sandbox) = info else { throw Unexpected() }
        #expect(jws == added[0].signedTransaction)
        #expect(calls.map(\.endpoint) == [.production, .sandbox])
        #expect(calls.map(\.outcome) == ["4040010", "http_200"])

        let (history, historyCalls) = world.client.transactionHistory(
            transactionId: added[0].transactionId, bundleId: Self.bundle
        )
        guard case .success(let read, environment: .sandbox) = history else { throw Unexpected() }
        #expect(read.signedTransactions == [jws])
        #expect(historyCalls.count == 2)

        let (order, orderCalls) = world.client.lookUpOrder(orderId: "SANDBOX1", bundleId: Self.bundle)
        guard case .success([jws], environment: .sandbox) = order else { throw Unexpected() }
        #expect(orderCalls.map(\.outcome) == ["1", "http_200"])

        // Asked of production only, it is not there.
        let (pinned, pinnedCalls) = world.client.transactionInfo(
            transactionId: added[0].transactionId, bundleId: Self.bundle, environment: .production
        )
        guard case .notFound = pinned else { throw Unexpected() }
        #expect(pinnedCalls.count == 1)
        let stats = world.server.apiStats()
        #expect(stats.requests["production.transaction_info"] == 2)
        #expect(stats.requests["sandbox.transaction_info"] == 1)
    }

    @Test("known to neither environment, or asked for another app: a definite not found after exactly two calls")
    func notFoundInBoth() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([FakePurchase(bundleId: "com.example.other", productId: "x")])
        for id in ["999", added[0].transactionId] {
            let (result, calls) = world.client.transactionInfo(transactionId: id, bundleId: Self.bundle)
            guard case .notFound(let failure) = result else { throw Unexpected() }
            #expect(calls.map(\.outcome) == ["4040010", "4040010"])
            #expect(failure.message.hasPrefix("production: HTTP 404, Apple error 4040010"))
            #expect(failure.endpoint == .sandbox)
        }
        let (order, orderCalls) = world.client.lookUpOrder(orderId: "NOPE", bundleId: Self.bundle)
        guard case .notFound = order else { throw Unexpected() }
        #expect(orderCalls.count == 2)
        let (history, _) = world.client.transactionHistory(transactionId: "999", bundleId: Self.bundle)
        guard case .notFound = history else { throw Unexpected() }
    }

    @Test("a key the fake does not know: 401 is a configuration error, without a sandbox hop")
    func wrongKey() throws {
        let world = try ServerAPIWorld(clientKey: P256.Signing.PrivateKey())
        defer { world.stop() }
        let added = try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x")])
        let (result, calls) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        guard case .configurationError(let failure) = result else { throw Unexpected() }
        #expect(failure.httpStatus == 401)
        #expect(failure.message.contains("APPSTORE_PRIVATE_KEY_FILE"))
        #expect(calls.map(\.outcome) == ["http_401"])
        #expect(world.server.apiStats().count("production.transaction_info", "401") == 1)
    }

    @Test("a 429: retryable with Apple's Retry-After, and the next request waits for it instead of meeting another")
    func rateLimited() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x")])
        let key = RequestPacer.Key(bundleId: Self.bundle, operation: .transactionInfo)
        world.server.injectAPIFaults([.rateLimited(retryAfterMilliseconds: 600)])
        let asked = Date()
        let (limited, _) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        let answered = Date()
        guard case .retryable(let failure) = limited else { throw Unexpected() }
        #expect(failure.cause == .rateLimited)
        #expect(failure.appleStatus == 4290000)
        // Apple's Retry-After is a date 600 ms after it answered, read as seconds from the moment the answer was read.
        let retryAfter = try #require(failure.retryAfterSeconds)
        let elapsed = answered.timeIntervalSince(asked)
        #expect(retryAfter <= 0.601 && retryAfter >= 0.598 - elapsed, "\(retryAfter) s, \(elapsed) s after asking")
        // Until when the pacer holds the operation, on its clock (at most: `remainingPause` reads the clock later).
        let pauseEnd = RequestPacer.monotonicSeconds() + world.client.pacer.remainingPause(key)

        let (again, calls) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        #expect(again.value == added[0].signedTransaction)
        #expect(calls.map(\.outcome) == ["http_200"])
        let releases = world.client.pacer.releases(of: key)
        #expect(releases.count == 2)
        #expect(try #require(releases.last) >= pauseEnd, "released \(pauseEnd - (releases.last ?? 0)) s early")
        #expect(world.server.apiStats().count("production.transaction_info", "429") == 1)
        #expect(world.server.apiStats().count("production.transaction_info", "200") == 1)
    }

    @Test("a 429 with a minute's Retry-After: the operation is not sent again meanwhile, another operation goes at once")
    func rateLimitedForAMinute() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x", orderId: "O1")])
        world.server.injectAPIFaults([.rateLimited(retryAfterMilliseconds: 60_000)])
        let (limited, _) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        guard case .retryable(let failure) = limited else { throw Unexpected() }
        #expect(failure.cause == .rateLimited)

        // Held past maxPacingDelaySeconds (30 s): refused in the client, never sent.
        let (held, heldCalls) = world.client.transactionInfo(transactionId: added[0].transactionId, bundleId: Self.bundle)
        guard case .retryable(let paced) = held else { throw Unexpected() }
        #expect(paced.cause == .rateLimited)
        #expect(try #require(paced.retryAfterSeconds) > 30)
        #expect(heldCalls.map(\.outcome) == ["paced"])
        #expect(world.server.apiStats().count("production.transaction_info", "429") == 1)
        #expect(world.server.apiStats().count("production.transaction_info", "200") == 0)

        // Order lookups for the same app are paced on their own: sent, and not held for the minute (a wait far
        // below it: a lookup held by the pause would have waited the whole minute, or been refused as "paced").
        let (order, orderCalls) = world.client.lookUpOrder(orderId: "O1", bundleId: Self.bundle)
        #expect(order.value == [added[0].signedTransaction])
        #expect(orderCalls.map(\.outcome) == ["http_200"])
        #expect(orderCalls.allSatisfy { $0.waitedSeconds < 30 }, "\(orderCalls.map(\.waitedSeconds))")
        #expect(world.server.apiStats().count("production.order_lookup", "200") == 1)
    }

    @Test("5000001, an HTML 503 and truncated JSON are retryable; the next call succeeds")
    func retryableFaults() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x")])
        let id = added[0].transactionId
        world.server.injectAPIFaults([.internalRetryable, .html503, .truncated])

        let (internalError, _) = world.client.transactionInfo(transactionId: id, bundleId: Self.bundle)
        guard case .retryable(let apple) = internalError else { throw Unexpected() }
        #expect(apple.appleStatus == 5000001)
        #expect(apple.httpStatus == 500)

        let (html, _) = world.client.transactionInfo(transactionId: id, bundleId: Self.bundle)
        guard case .retryable(let page) = html else { throw Unexpected() }
        #expect(page.httpStatus == 503)
        #expect(page.message.contains("body starts \"<!DOCTYPE html>"), "\(page.message)")

        let (truncated, truncatedCalls) = world.client.transactionInfo(transactionId: id, bundleId: Self.bundle)
        guard case .retryable(let broken) = truncated else { throw Unexpected() }
        #expect(broken.cause == .unreadableBody)
        #expect(truncatedCalls.count == 1)

        let (fine, _) = world.client.transactionInfo(transactionId: id, bundleId: Self.bundle)
        #expect(fine.value == added[0].signedTransaction)
    }

    @Test("history stops at maxHistoryPages with the revision to go on from, which reads the rest")
    func historyBound() throws {
        let world = try ServerAPIWorld(client: { $0.maxHistoryPages = 2 })
        defer { world.stop() }
        let first = try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "a")])[0]
        let more = try world.server.purchases.add((0..<5).map { _ in
            FakePurchase(bundleId: Self.bundle, productId: "a", customerId: first.customerId)
        })
        let (partial, _) = world.client.transactionHistory(transactionId: first.transactionId, bundleId: Self.bundle)
        let head = try #require(partial.value)
        #expect(head.pages == 2)
        #expect(head.signedTransactions.count == 4)
        #expect(!head.isComplete)
        let (rest, _) = world.client.transactionHistory(
            transactionId: first.transactionId, bundleId: Self.bundle, revision: head.nextRevision,
            environment: .production
        )
        let tail = try #require(rest.value)
        #expect(tail.isComplete)
        #expect(head.signedTransactions + tail.signedTransactions == ([first] + more).map(\.signedTransaction))
    }

    @Test("history with a query: every page asks the same filters (the fake refuses a revision without them); until stops the reading")
    func historyQuery() throws {
        let world = try ServerAPIWorld(client: { $0.maxHistoryPages = 3 })
        defer { world.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Oldest first: a0 b1 a2 b3 a4 b5 a6 b7 a8 b9, a minute apart.
        let added = try world.server.purchases.add((0..<10).map { index in
            FakePurchase(
                bundleId: Self.bundle, productId: index % 2 == 0 ? "a" : "b", customerId: "c",
                purchaseDate: now - Int64(10 - index) * 60_000
            )
        })
        let query = TransactionHistoryQuery(sort: .descending, productIds: ["a"], startDate: now - 8 * 60_000)
        let (result, calls) = world.client.transactionHistory(
            transactionId: added[1].transactionId, bundleId: Self.bundle, query: query
        )
        let history = try #require(result.value)
        #expect(calls.count == 2, "a8 a6 | a4 a2 (a0 is before startDate)")
        #expect(history.isComplete && !history.isTruncated)
        #expect(history.signedTransactions == [8, 6, 4, 2].map { added[$0].signedTransaction })

        let wanted = added[4].transactionId
        let (found, foundCalls) = world.client.transactionHistory(
            transactionId: added[1].transactionId, bundleId: Self.bundle,
            query: TransactionHistoryQuery(sort: .descending),
            until: { page in page.contains { SignedTransaction.unverifiedTransactionId($0) == wanted } }
        )
        let stopped = try #require(found.value)
        #expect(foundCalls.count == 3, "b9 a8 | b7 a6 | b5 a4: stopped there")
        #expect(stopped.satisfied && !stopped.isComplete && !stopped.isTruncated)

        let (cut, _) = world.client.transactionHistory(
            transactionId: added[1].transactionId, bundleId: Self.bundle,
            query: TransactionHistoryQuery(sort: .descending), until: { _ in false }
        )
        let truncated = try #require(cut.value)
        #expect(truncated.pages == 3)
        #expect(truncated.isTruncated, "the cap, not the caller, ended it")
    }

    @Test("ids that cannot be Apple's are refused without a request")
    func refusedIds() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let (info, calls) = world.client.transactionInfo(transactionId: "1/../2", bundleId: Self.bundle)
        guard case .rejected(let failure) = info else { throw Unexpected() }
        #expect(failure.cause == .invalidRequest)
        #expect(calls.isEmpty)
        let (order, _) = world.client.lookUpOrder(orderId: "", bundleId: Self.bundle)
        guard case .rejected = order else { throw Unexpected() }
        #expect(world.server.apiStats().requests.isEmpty)
        // An order id with a slash stays one segment: the fake sees the whole id.
        let added = try world.server.purchases.add([
            FakePurchase(bundleId: Self.bundle, productId: "x", orderId: "A/B C"),
        ])
        let (found, _) = world.client.lookUpOrder(orderId: "A/B C", bundleId: Self.bundle)
        #expect(found.value == [added[0].signedTransaction])
    }

    @Test("a burst of lookups waits in the client: spread at the configured rate, none meets Apple's limit")
    func pacing() throws {
        // 4 a second against the fake's 12: the fake sees 13 within a second only if the requests after a 2 s
        // stall on the way bunch up with those before it (at 10 a second, a 0.3 s stall on a loaded machine did).
        let world = try ServerAPIWorld(
            fake: { $0.apiRateLimit = 12 }, client: { $0.requestsPerSecond[.orderLookup] = 4 }
        )
        defer { world.stop() }
        try world.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x", orderId: "ORDER1")])
        let outcomes = try Self.burst(world.client, count: 20)
        #expect(outcomes.filter { $0.value == nil }.isEmpty, "\(outcomes.compactMap(\.failure))")
        let stats = world.server.apiStats()
        #expect(stats.count("production.order_lookup", "429") == 0)
        #expect(stats.count("production.order_lookup", "200") == 20)
        #expect(stats.maxPerSecond("order_lookup") <= 12)
        // 20 requests at 4 a second (a burst of 1): released over at least 4.75 s, however late the timers fired.
        let releases = world.client.pacer.releases(of: .init(bundleId: Self.bundle, operation: .orderLookup))
        #expect(releases.count == 20)
        #expect((releases.last ?? 0) - (releases.first ?? 0) >= 4.75 - 1e-6, "\(releases)")
        #expect(zip(releases, releases.dropFirst()).allSatisfy { $1 - $0 >= 0.25 - 1e-6 }, "\(releases)")

        // The same burst without pacing (a rate far above the fake's limit) does meet 429s: the limit is real.
        let unpaced = try ServerAPIWorld(
            fake: { $0.apiRateLimit = 12 }, client: { $0.requestsPerSecond[.orderLookup] = 10_000 }
        )
        defer { unpaced.stop() }
        try unpaced.server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "x", orderId: "ORDER1")])
        _ = try Self.burst(unpaced.client, count: 25)
        #expect(unpaced.server.apiStats().count("production.order_lookup", "429") > 0)
    }

    @Test("the sandbox is paced at its own limits, a tenth of production's, and apart from production")
    func sandboxPacing() throws {
        let world = try ServerAPIWorld()
        defer { world.stop() }
        let added = try world.server.purchases.add([
            FakePurchase(environment: "Sandbox", bundleId: Self.bundle, productId: "x"),
            FakePurchase(bundleId: Self.bundle, productId: "x"),
        ])
        let group = DispatchGroup()
        for _ in 0..<4 {
            for (purchase, environment) in [(added[0], AppStoreEndpoint.sandbox), (added[1], .production)] {
                group.enter()
                world.client.transactionInfo(
                    transactionId: purchase.transactionId, bundleId: Self.bundle, environment: environment
                ) { _, _ in group.leave() }
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        let sandbox = world.client.pacer.releases(
            of: .init(bundleId: Self.bundle, operation: .transactionInfo, environment: .sandbox)
        )
        let production = world.client.pacer.releases(
            of: .init(bundleId: Self.bundle, operation: .transactionInfo, environment: .production)
        )
        #expect(sandbox.count == 4 && production.count == 4)
        // Sandbox: 5 a second, so 0.2 s apart; production's 50 a second go meanwhile, 0.02 s apart.
        #expect(zip(sandbox, sandbox.dropFirst()).allSatisfy { $1 - $0 >= 0.2 - 1e-6 }, "\(sandbox)")
        #expect((production.last ?? 0) - (production.first ?? 0) < 0.6, "production waits for no sandbox slot")
        #expect(world.server.apiStats().count("sandbox.transaction_info", "200") == 4)
    }

    struct Outcome: Sendable {
        var value: [String]?
        var failure: AppStoreFailure?
    }

    /// Sends `count` order lookups at once through the callback API and waits (generously) for every completion.
    static func burst(_ client: ServerAPIClient, count: Int) throws -> [Outcome] {
        let outcomes = Mutex<[Outcome]>([])
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            client.lookUpOrder(orderId: "ORDER1", bundleId: bundle, environment: .production) { result, _ in
                let outcome = Outcome(value: result.value, failure: result.failure)
                outcomes.withLock { $0.append(outcome) }
                group.leave()
            }
        }
        try #require(group.wait(timeout: .now() + 120) == .success)
        return outcomes.withLock { $0 }
    }
}
