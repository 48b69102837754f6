import AppStoreModel
import AppleFixtureFiles
import Dispatch
import Foundation
import LoopbackHTTP
import Synchronization
import Testing

@testable import FakeAppStore

/// Starts a server on an ephemeral port for one test body and stops it afterwards.
func withServer<T>(
    _ configuration: FakeAppStoreConfiguration = FakeAppStoreConfiguration(threads: 1),
    _ body: (FakeAppStoreServer) throws -> T
) throws -> T {
    let server = try FakeAppStoreServer.start(configuration)
    defer { server.stop() }
    return try body(server)
}

let production = "/verifyReceipt"
let sandbox = "/sandbox/verifyReceipt"

@Suite("Fake App Store over HTTP: real receipts")
struct FakeAppStoreRealReceiptTests {
    @Test(
        "the RevenueCat sandbox receipt: 21007 from production, Apple's transactions from the sandbox",
        .needsAppleFixtures
    )
    func revenueCat() throws {
        let receipt = try Fixtures.text("revenuecat-sandbox-receipt.b64")
        let apple = try JSONDecoder().decode(
            VerifyReceiptResponse.self, from: Fixtures.data("revenuecat-sandbox-verifyReceipt-response.json")
        )
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let fromProduction = try client.verify(production, receiptData: receipt)
            #expect(fromProduction.status == 200)
            #expect(fromProduction.headers["content-type"] == "application/json")
            #expect(try fromProduction.json(VerifyReceiptResponse.self).status == 21007)

            let answer = try client.answer(sandbox, receipt)
            #expect(answer.status == 0)
            #expect(answer.environment == "Sandbox")
            #expect(answer.receipt?.bundleId == "com.revenuecat.sampleapp")
            #expect(answer.receipt?.receiptType == "ProductionSandbox")
            #expect(answer.receipt?.inApp?.map(\.transactionId) == apple.receipt?.inApp?.map(\.transactionId))
            #expect(answer.receipt?.inApp == apple.receipt?.inApp)
            #expect(answer.latestReceiptInfo?.map(\.transactionId) == apple.latestReceiptInfo?.map(\.transactionId))
            #expect(answer.pendingRenewalInfo == apple.pendingRenewalInfo)
            #expect(answer.latestReceipt == receipt)

            let stats = server.stats()
            #expect(stats.count("production", "21007") == 1)
            #expect(stats.count("sandbox", "0") == 1)
            #expect(stats.total == 2)
        }
    }

    @Test("the production receipt: status 0 from production, 21008 from the sandbox", .needsAppleFixtures)
    func productionReceipt() throws {
        let receipt = try Fixtures.text("tpinappreceipt-production-receipt.b64")
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let answer = try client.answer(production, receipt)
            #expect(answer.status == 0)
            #expect(answer.environment == "Production")
            #expect(answer.receipt?.bundleId == "org.getpure.pure-iphone")
            #expect(answer.receipt?.inApp?.count == 4)
            #expect(answer.latestReceiptInfo?.count == 4)
            #expect(try client.status(sandbox, receipt) == 21008)
        }
    }

    @Test("Xcode receipts are not signed by Apple: 21003 at both endpoints", .needsAppleFixtures)
    func xcode() throws {
        let receipts = try [
            Fixtures.text("tpinappreceipt-xcode-receipt.b64"),
            Fixtures.text("appstoreserverlibrary-xcode-receipt-with-transaction.b64"),
        ]
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            for receipt in receipts {
                for path in [production, sandbox] {
                    #expect(try client.status(path, receipt) == 21003)
                }
            }
        }
    }

    @Test("garbage receipts get 21002, unreadable requests 21000, other paths 404")
    func garbage() throws {
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            for junk in ["garbage!", Data("not a receipt".utf8).base64EncodedString(), "AAAA"] {
                #expect(try client.status(production, junk) == 21002)
            }
            let notJSON = try client.request("POST", production, body: Data("receipt-data=abc".utf8))
            #expect(try notJSON.json(VerifyReceiptResponse.self).status == 21000)
            let noReceipt = try client.request("POST", sandbox, body: Data(#"{"password":"x"}"#.utf8))
            #expect(try noReceipt.json(VerifyReceiptResponse.self).status == 21000)
            #expect(try client.request("GET", production).status == 404)
            #expect(try client.request("POST", "/verify").status == 404)
            #expect(server.stats().count("production", "21002") == 3)
            #expect(server.stats().total == 5, "404s are not verifyReceipt answers")
        }
    }
}

@Suite("Fake App Store over HTTP: scenarios, faults, secrets, stats, latency")
struct FakeAppStoreScenarioTests {
    static let lifetime = InAppTransaction(
        productId: "lifetime", transactionId: "5001", purchaseDateMs: 1_700_000_000_000
    )
    static let monthly = InAppTransaction(
        productId: "monthly", transactionId: "6002", originalTransactionId: "6001",
        purchaseDateMs: 1_700_000_000_000, expiresDateMs: 1_702_592_000_000
    )

    @Test("faults [21005, html503] answer in order, then the normal answer")
    func faultSequence() throws {
        let receipt = ScenarioReceipt(
            environment: "Production", bundleId: "com.example", inApp: [Self.lifetime],
            faults: [.status21005, .html503]
        ).base64()
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            #expect(try client.status(production, receipt) == 21005)

            let unavailable = try client.verify(production, receiptData: receipt)
            #expect(unavailable.status == 503)
            #expect(unavailable.headers["retry-after"] == "1")
            #expect(unavailable.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(unavailable.text.contains("<html>"))

            let answer = try client.answer(production, receipt)
            #expect(answer.status == 0)
            #expect(answer.environment == "Production")
            #expect(answer.receipt?.inApp == [Self.lifetime])
            #expect(answer.receipt?.receiptType == "Production")
            #expect(answer.latestReceiptInfo == nil)
            #expect(try client.status(production, receipt) == 0)

            let stats = server.stats()
            #expect(stats.statuses["production"] == ["21005": 1, "html503": 1, "0": 2])
        }
    }

    @Test("a sandbox scenario hops exactly once; the fault count follows the receipt across endpoints")
    func sandboxHop() throws {
        let receipt = ScenarioReceipt(
            environment: "Sandbox", bundleId: "b", inApp: [Self.monthly], faults: [.status21199], nonce: "hop"
        ).base64()
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let retryable = try client.answer(sandbox, receipt)
            #expect(retryable.status == 21199)
            #expect(retryable.isRetryable == true)
            #expect(try client.status(production, receipt) == 21007)
            let answer = try client.answer(sandbox, receipt)
            #expect(answer.status == 0)
            #expect(answer.environment == "Sandbox")
            #expect(answer.latestReceiptInfo == [Self.monthly], "subscriptions are copied to latest_receipt_info")
            #expect(answer.pendingRenewalInfo?.map(\.originalTransactionId) == ["6001"])
            #expect(server.stats().statuses == ["sandbox": ["21199": 1, "0": 1], "production": ["21007": 1]])
            #expect(server.stats().requests == ["sandbox": 2, "production": 1])
        }
    }

    @Test("a production scenario sent to the sandbox gets 21008; a forced status comes after the faults")
    func forcedStatus() throws {
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let accountGone = ScenarioReceipt(
                environment: "Production", bundleId: "b", inApp: [], status: 21010, faults: [.status21100]
            ).base64()
            #expect(try client.status(sandbox, accountGone) == 21100)
            #expect(try client.status(sandbox, accountGone) == 21008)
            #expect(try client.status(production, accountGone) == 21010)

            let expired = ScenarioReceipt(
                environment: "Production", bundleId: "b", inApp: [Self.monthly], status: 21006)
            let answer = try client.answer(production, expired.base64())
            #expect(answer.status == 21006)
            #expect(answer.receipt?.inApp == [Self.monthly], "21006 still carries the receipt")
        }
    }

    @Test("explicit latest_receipt_info is answered as given")
    func explicitLatest() throws {
        let renewed = InAppTransaction(
            productId: "monthly", transactionId: "6003", originalTransactionId: "6001",
            purchaseDateMs: 1_702_592_000_000, expiresDateMs: 1_705_270_400_000
        )
        let receipt = ScenarioReceipt(
            environment: "Production", bundleId: "b", inApp: [Self.monthly], latestReceiptInfo: [Self.monthly, renewed]
        ).base64()
        try withServer { server in
            let answer = try LoopbackHTTPClient(port: server.port).answer(production, receipt)
            #expect(answer.latestReceiptInfo == [Self.monthly, renewed])
            #expect(answer.receipt?.inApp == [Self.monthly])
        }
    }

    @Test(
        "shared secret: a different one gets 21004; none is fine unless the receipt holds subscriptions",
        .needsAppleFixtures
    )
    func sharedSecret() throws {
        let oneTime = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [Self.lifetime]).base64()
        let subscription = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [Self.monthly]).base64()
        let revenueCat = try Fixtures.text("revenuecat-sandbox-receipt.b64")
        try withServer(FakeAppStoreConfiguration(threads: 1, sharedSecret: "s3cret")) { server in
            let client = try LoopbackHTTPClient(port: server.port)
            #expect(try client.status(production, oneTime, password: "wrong") == 21004)
            #expect(try client.status(production, oneTime, password: "s3cret") == 0)
            #expect(try client.status(production, oneTime) == 0)
            #expect(try client.status(production, subscription) == 21004)
            #expect(try client.status(production, subscription, password: "s3cret") == 0)
            #expect(try client.status(sandbox, revenueCat, password: "wrong") == 21004)
            #expect(try client.status(sandbox, revenueCat) == 21004)
            #expect(try client.status(sandbox, revenueCat, password: "s3cret") == 0)
            #expect(server.stats().count("production", "21004") == 2)
            #expect(server.stats().count("sandbox", "21004") == 2)
        }
    }

    @Test("GET /stats serves the counts; POST /stats/reset clears them")
    func statsEndpoint() throws {
        let receipt = ScenarioReceipt(environment: "Sandbox", bundleId: "b", inApp: [Self.lifetime]).base64()
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            _ = try client.verify(production, receiptData: receipt)
            _ = try client.verify(sandbox, receiptData: receipt)
            _ = try client.verify(sandbox, receiptData: receipt)
            let served = try client.request("GET", "/stats").json(FakeAppStoreStats.self)
            #expect(served == server.stats())
            #expect(served.requests == ["production": 1, "sandbox": 2])
            #expect(served.statuses == ["production": ["21007": 1], "sandbox": ["0": 2]])
            #expect(served.total == 3)

            #expect(try client.request("POST", "/stats/reset").json(FakeAppStoreStats.self) == FakeAppStoreStats())
            #expect(server.stats() == FakeAppStoreStats())
            _ = try client.verify(sandbox, receiptData: receipt)
            server.resetStats()
            #expect(server.stats().total == 0)
        }
    }

    @Test("the stats say when the requests arrived and how late after due the delayed answers went out")
    func arrivalsAndLateness() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: []).base64()
        // A 4 s latency, so that an answer's lateness on a loaded machine (up to 3.6 s allowed) stays clear of what
        // a lateness measured from the request would show (at least the latency); with 1 s, 0.9 s was the bound.
        try withServer(FakeAppStoreConfiguration(threads: 1, latencyMilliseconds: 4_000)) { server in
            let client = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: 30)
            #expect(server.stats().requestArrivalSpanSeconds == nil)
            _ = try client.verify(production, receiptData: receipt)
            Thread.sleep(forTimeInterval: 0.2)
            _ = try client.verify(sandbox, receiptData: receipt)
            let stats = try client.request("GET", "/stats").json(FakeAppStoreStats.self)
            // The second request came at least 4.2 s after the first (the first answer's 4 s, then the pause).
            let span = try #require(stats.requestArrivalSpanSeconds)
            #expect(span >= 4.1 && span < 60)
            #expect(stats.delayedAnswers == 2)
            // Measured from the moment each answer was due, not from its request: far less than the latency.
            #expect(stats.lateMillisecondsMax >= 0 && stats.lateMillisecondsMax < 3_600)
            #expect(stats.delayedAnswers == stats.total)

            #expect(try client.request("POST", "/stats/reset").json(FakeAppStoreStats.self) == FakeAppStoreStats())
            // Without latency nothing is held back, and nothing counts as delayed.
            server.setLatency(milliseconds: 0, jitter: 0)
            _ = try client.verify(production, receiptData: receipt)
            #expect(server.stats().delayedAnswers == 0)
            #expect(server.stats().requestArrivalSpanSeconds == 0)

            // A delayed connection reset sends no answer, so it is no delayed answer either.
            server.setLatency(milliseconds: 50, jitter: 0)
            server.setFaults(FaultRates(connectionReset: 1))
            #expect(throws: (any Error).self) { try client.verify(production, receiptData: receipt) }
            #expect(server.stats().total == 2)
            #expect(server.stats().delayedAnswers == 0)
        }
    }

    @Test("the spread of a burst's arrivals: half and 90% of the requests, to the 10 ms, and a bounded record")
    func arrivalSpread() throws {
        var stats = FakeAppStoreStats()
        #expect(stats.requestArrivalSeconds(untilFraction: 0.5) == nil)
        // 10 requests at 1,000 ms, 10 at 1,205 ms, 80 at 1,999 ms since 1970.
        for (at, count) in [(Int64(1_000), 10), (1_205, 10), (1_999, 80)] {
            for _ in 0..<count { stats.record(endpoint: "production", answer: "0", arrivedAtMs: at) }
        }
        #expect(stats.requestArrivalSeconds(untilFraction: 0.1) == 0)
        #expect(stats.requestArrivalSeconds(untilFraction: 0.2) == 0.2)
        #expect(stats.requestArrivalSeconds(untilFraction: 0.5) == 0.99)
        #expect(stats.requestArrivalSeconds(untilFraction: 1) == 0.99)
        #expect(stats.requestsByArrival.count == 3)
        // Through `GET /stats`'s JSON and back: the same figures.
        let decoded = try JSONDecoder().decode(FakeAppStoreStats.self, from: JSONEncoder().encode(stats))
        #expect(decoded == stats)
        #expect(decoded.requestArrivalSeconds(untilFraction: 0.5) == 0.99)

        // A quantile is to the 10 ms slot but never past the span: 1,009 ms, then 1,010 ms, is a span of 1 ms.
        var close = FakeAppStoreStats()
        close.record(endpoint: "production", answer: "0", arrivedAtMs: 1_009)
        close.record(endpoint: "production", answer: "0", arrivedAtMs: 1_010)
        close.record(endpoint: "production", answer: "0", arrivedAtMs: 1_010)
        #expect(close.requestArrivalSeconds(untilFraction: 0.5) == 0.001)

        // A fake left running keeps at most `maxArrivalSlots` slots; past them the spread is unknown, not wrong.
        var full = FakeAppStoreStats()
        for slot in 0..<Int64(FakeAppStoreStats.maxArrivalSlots) {
            full.record(endpoint: "production", answer: "0", arrivedAtMs: slot * 10)
        }
        #expect(full.requestArrivalSeconds(untilFraction: 0.5) != nil)
        full.record(endpoint: "production", answer: "0", arrivedAtMs: 0)
        full.record(endpoint: "production", answer: "0", arrivedAtMs: Int64(FakeAppStoreStats.maxArrivalSlots) * 10)
        #expect(full.requestsByArrival.count == FakeAppStoreStats.maxArrivalSlots)
        #expect(full.requestsPastArrivalSlots == 1)
        #expect(full.requestArrivalSeconds(untilFraction: 0.5) == nil)
        #expect(full.requestArrivalSpanSeconds == Double(FakeAppStoreStats.maxArrivalSlots) / 100)
    }

    @Test("late answers: the mean, the most, and the count past the threshold; an early timer counts as on time")
    func lateAnswerFigures() {
        var stats = FakeAppStoreStats()
        #expect(stats.lateMillisecondsMean == nil)
        stats.recordDelayedAnswer(lateMilliseconds: -1)
        stats.recordDelayedAnswer(lateMilliseconds: 5)
        stats.recordDelayedAnswer(lateMilliseconds: FakeAppStoreStats.lateThresholdMilliseconds + 15)
        #expect(stats.delayedAnswers == 3)
        #expect(stats.lateMillisecondsMax == FakeAppStoreStats.lateThresholdMilliseconds + 15)
        #expect(stats.lateMillisecondsTotal == 20 + FakeAppStoreStats.lateThresholdMilliseconds)
        #expect(stats.lateAnswers == 1)
        #expect(stats.lateMillisecondsMean == (20 + FakeAppStoreStats.lateThresholdMilliseconds) / 3)
    }

    @Test("latency delays every answer by at least the configured time, and can change at run time")
    func latency() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: []).base64()
        try withServer(FakeAppStoreConfiguration(threads: 1, latencyMilliseconds: 1_500)) { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let clock = ContinuousClock()
            var answer: LoopbackHTTPClient.Response?
            let slow = try clock.measure { answer = try client.verify(production, receiptData: receipt) }
            #expect(slow >= .milliseconds(1_500))
            #expect(try answer?.json(VerifyReceiptResponse.self).status == 0)

            // Raised to a minute: a client that reads for a second gets nothing.
            server.setLatency(milliseconds: 60_000, jitter: 0)
            let patient = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: 1)
            #expect(throws: LoopbackHTTPClient.Failure.timeout) { try patient.verify(production, receiptData: receipt) }

            // Back to none: the answer comes within a read timeout half the minute it would otherwise take.
            server.setLatency(milliseconds: 0, jitter: 0)
            let prompt = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: 30)
            #expect(try prompt.answer(production, receipt).status == 0)

            server.setLatency(milliseconds: 100, jitter: 100)
            let jittered = try clock.measure { _ = try client.verify(production, receiptData: receipt) }
            #expect(jittered >= .milliseconds(100))
        }
    }

    @Test("keep-alive: many requests on one connection, answered in order")
    func keepAlive() throws {
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            for index in 0..<20 {
                let transaction = InAppTransaction(productId: "p", transactionId: "t\(index)", purchaseDateMs: 1)
                let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [transaction]).base64()
                let response = try client.verify(production, receiptData: receipt)
                #expect(response.headers["connection"] != "close")
                #expect(
                    try response.json(VerifyReceiptResponse.self).receipt?.inApp?.first?.transactionId == "t\(index)")
            }
            #expect(server.stats().count("production", "0") == 20)
        }
    }

    @Test("Connection: close is honoured")
    func connectionClose() throws {
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let response = try client.request("GET", "/stats", headers: [("Connection", "close")])
            #expect(response.status == 200)
            #expect(response.headers["connection"] == "close")
            #expect(client.awaitClose() == .closed(received: 0))
        }
    }

    @Test("truncated: 200 whose body is the first half of the JSON answer, then the connection closes")
    func truncated() throws {
        let receipt = ScenarioReceipt(
            environment: "Production", bundleId: "b", inApp: [Self.monthly], faults: [.truncated]
        ).base64()
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let cut = try client.verify(production, receiptData: receipt)
            #expect(cut.status == 200)
            #expect(cut.headers["connection"] == "close")
            #expect(throws: DecodingError.self) { try cut.json(VerifyReceiptResponse.self) }
            #expect(client.awaitClose() == .closed(received: 0))

            let complete = try LoopbackHTTPClient(port: server.port).verify(production, receiptData: receipt)
            #expect(try complete.json(VerifyReceiptResponse.self).status == 0)
            #expect(cut.body.count == complete.body.count / 2)
            #expect(cut.text.hasPrefix("{"))
            #expect(server.stats().statuses["production"] == ["truncated": 1, "0": 1])
        }
    }

    @Test("reset: the connection is reset without an answer")
    func reset() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [], faults: [.reset]).base64()
        try withServer { server in
            let client = try LoopbackHTTPClient(port: server.port)
            #expect(throws: LoopbackHTTPClient.Failure.reset) { try client.verify(production, receiptData: receipt) }
            #expect(try LoopbackHTTPClient(port: server.port).verify(production, receiptData: receipt).status == 200)
        }
    }

    @Test("hang: no answer for hangSeconds, then the connection closes")
    func hang() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [], faults: [.hang]).base64()
        try withServer(FakeAppStoreConfiguration(threads: 1, hangSeconds: 1)) { server in
            let client = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: 5)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(throws: LoopbackHTTPClient.Failure.closed(received: 0)) {
                try client.verify(production, receiptData: receipt)
            }
            #expect(clock.now - start >= .milliseconds(900))
            #expect(server.stats().count("production", "hang") == 1)
        }
    }

    @Test("stop() ends a hanging request at once and is idempotent")
    func stopDuringHang() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: [], faults: [.hang]).base64()
        let server = try FakeAppStoreServer.start(FakeAppStoreConfiguration(threads: 1, hangSeconds: 60))
        let client = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: 5)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { server.stop() }
        #expect(throws: LoopbackHTTPClient.Failure.self) { try client.verify(production, receiptData: receipt) }
        server.stop()
        #expect(throws: LoopbackHTTPClient.Failure.self) { try LoopbackHTTPClient(port: server.port) }
    }

    @Test("random fault rates apply to every request and can be switched off at run time")
    func randomFaults() throws {
        let receipt = ScenarioReceipt(environment: "Production", bundleId: "b", inApp: []).base64()
        try withServer(FakeAppStoreConfiguration(threads: 1, faults: FaultRates(wrongSecret21004: 1))) { server in
            let client = try LoopbackHTTPClient(port: server.port)
            for _ in 0..<3 {
                #expect(try client.status(production, receipt) == 21004)
            }
            server.setFaults(FaultRates(html503: 1))
            #expect(try client.verify(production, receiptData: receipt).status == 503)
            server.setFaults(.none)
            #expect(try client.status(production, receipt) == 0)
            #expect(server.stats().statuses["production"] == ["21004": 3, "html503": 1, "0": 1])
        }
    }

    @Test("many keep-alive connections at once: every request answered and counted")
    func concurrentConnections() throws {
        let connections = 16
        let requestsEach = 50
        try withServer(FakeAppStoreConfiguration(threads: 2)) { server in
            let failures = Mutex([String]())
            DispatchQueue.concurrentPerform(iterations: connections) { connection in
                do {
                    let client = try LoopbackHTTPClient(port: server.port)
                    for index in 0..<requestsEach {
                        let transaction = InAppTransaction(
                            productId: "p", transactionId: "\(connection)-\(index)", purchaseDateMs: 1
                        )
                        let receipt = ScenarioReceipt(
                            environment: index % 2 == 0 ? "Production" : "Sandbox", bundleId: "b", inApp: [transaction]
                        ).base64()
                        let answer = try client.answer(production, receipt)
                        let expected = index % 2 == 0 ? 0 : 21007
                        if answer.status != expected {
                            failures.withLock { $0.append("\(connection)-\(index): \(answer.status)") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(connection): \(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(server.stats().total == connections * requestsEach)
            #expect(server.stats().count("production", "21007") == connections * requestsEach / 2)
        }
    }

    @Test("start rejects bad configuration and a port in use")
    func startErrors() throws {
        #expect(throws: FakeAppStoreError.self) {
            try FakeAppStoreServer.start(FakeAppStoreConfiguration(port: 70_000))
        }
        #expect(throws: FakeAppStoreError.self) { try FakeAppStoreServer.start(FakeAppStoreConfiguration(threads: 0)) }
        try withServer { server in
            #expect(server.productionURL == "http://127.0.0.1:\(server.port)/verifyReceipt")
            #expect(server.sandboxURL == "http://127.0.0.1:\(server.port)/sandbox/verifyReceipt")
            do throws(FakeAppStoreError) {
                let second = try FakeAppStoreServer.start(FakeAppStoreConfiguration(port: server.port, threads: 1))
                second.stop()
                Issue.record("a second server bound the same port")
            } catch {
                #expect(error.code == .bindFailed)
            }
        }
    }
}
