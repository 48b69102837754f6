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

    @Test("a run without latency, and one that sent nothing")
    func nothingDelayed() {
        #expect(BenchReport.AppleStandIn(FakeAppStoreStats(firstRequestAtMs: 5, lastRequestAtMs: 5)).text
            == "requests arrived over 0.00 s (first → last); no delayed answers")
        #expect(BenchReport.AppleStandIn(FakeAppStoreStats()).text == "no verifyReceipt requests; no delayed answers")
    }
}
