import FakeAppStore
import Testing

@testable import Bench

/// The report's line on Apple's stand-in, from the fake App Store's `/stats`.
@Suite("bench reports when the requests reached the fake App Store and how late it answered")
struct AppleStandInTests {
    @Test("arrival span, delayed answers, mean and most late, and those past the threshold")
    func figures() {
        let stats = FakeAppStoreStats(
            firstRequestAtMs: 1_000, lastRequestAtMs: 2_500, delayedAnswers: 2, lateMillisecondsTotal: 20,
            lateMillisecondsMax: 16, lateAnswers: 1
        )
        let standIn = BenchReport.AppleStandIn(stats)
        #expect(standIn.requestArrivalSpanSeconds == 1.5)
        #expect(standIn.text == "requests arrived over 1.50 s (first → last); 2 delayed answers went out 10.0 ms after "
            + "due on average, 16.0 ms at most, 1 over 10 ms late")
    }

    @Test("the arrivals' spread: half and 90% of the requests, when the fake recorded it")
    func arrivalSpread() {
        let stats = FakeAppStoreStats(
            firstRequestAtMs: 1_000, lastRequestAtMs: 2_000, requestsByArrival: [100: 5, 130: 4, 200: 1]
        )
        let standIn = BenchReport.AppleStandIn(stats)
        #expect(standIn.requestArrivalHalfSeconds == 0)
        #expect(standIn.requestArrivalNinetiethSeconds == 0.3)
        #expect(standIn.text == "requests arrived over 1.00 s (first → last; half by 0.00 s; 90% by 0.30 s); "
            + "no delayed answers")
    }

    @Test("the fake's URLs come from its first line only, whatever a read brings along after it")
    func listeningLine() throws {
        let line = "fake App Store listening: production http://127.0.0.1:5/verifyReceipt "
            + "sandbox http://127.0.0.1:5/sandbox/verifyReceipt stats http://127.0.0.1:5/stats"
        // Plain text: the stats URL ends the line, and the next line may come in the same read.
        let urls = try #require(FakeAppStoreProcess.listeningURLs(line + "\nApp Store Server API: http://x\n"))
        #expect(urls.production == "http://127.0.0.1:5/verifyReceipt")
        #expect(urls.sandbox == "http://127.0.0.1:5/sandbox/verifyReceipt")
        #expect(urls.stats == "http://127.0.0.1:5/stats")
        #expect(try #require(FakeAppStoreProcess.listeningURLs(line + " ca-file /tmp/ca.pem\n")).stats
            == "http://127.0.0.1:5/stats")
        // Without a stats URL the run goes on without the line; without a verifyReceipt URL it cannot.
        #expect(try #require(FakeAppStoreProcess.listeningURLs("production http://a sandbox http://b")).stats == nil)
        #expect(FakeAppStoreProcess.listeningURLs("production http://a sandbox") == nil)
        #expect(FakeAppStoreProcess.listeningURLs("error: port in use") == nil)
    }

    @Test("a run without latency, and one that sent nothing")
    func nothingDelayed() {
        #expect(BenchReport.AppleStandIn(FakeAppStoreStats(firstRequestAtMs: 5, lastRequestAtMs: 5)).text
            == "requests arrived over 0.00 s (first → last); no delayed answers")
        #expect(BenchReport.AppleStandIn(FakeAppStoreStats()).text == "no verifyReceipt requests; no delayed answers")
        // Times from a JSON answer whose difference Int64 cannot hold: a figure, not a trap.
        let far = FakeAppStoreStats(firstRequestAtMs: .min, lastRequestAtMs: .max)
        #expect((far.requestArrivalSpanSeconds ?? 0) > 1e15)
    }
}
