import ReceiptQueue
import Testing

@testable import Bench

/// `bench --soak`'s arithmetic: the flatness verdict per series, CPU per job, and the recorder's intervals.
@Suite struct SoakSeriesTests {
    @Test func aSteadySeriesIsFlatTheWarmUpLeftOut() throws {
        // The first minute (warm-up) is far above the rest and must not count.
        let verdict = try #require(SoakFlatness.judge("cpu", [900, 100, 102, 98, 101, 99, 103, 100, 101], limit: 1.25))
        // 8 judged: quarters of 2: (100 + 102) / 2 and (100 + 101) / 2.
        #expect(verdict.firstQuarter == 101)
        #expect(verdict.lastQuarter == 100.5)
        #expect(abs(verdict.ratio - 100.5 / 101) < 1e-12)
        #expect(verdict.flat)
    }

    @Test func aGrowingSeriesIsNotFlat() throws {
        let values: [Double?] = [50, 100, 110, 120, 130, 140, 150, 160, 170]
        let verdict = try #require(SoakFlatness.judge("rss", values, limit: 1.10))
        #expect(verdict.firstQuarter == 105 && verdict.lastQuarter == 165)
        #expect(!verdict.flat)
        #expect(verdict.text.hasSuffix("GREW"))
    }

    @Test func theLimitIsInclusiveAndMissingIntervalsAreSkipped() throws {
        // nil: an interval without a notification applied; the quarter is 1 of 3 values.
        let verdict = try #require(SoakFlatness.judge("p99", [1, 10, nil, 12, nil, 15], limit: 1.5))
        #expect(verdict.firstQuarter == 10 && verdict.lastQuarter == 15 && verdict.ratio == 1.5 && verdict.flat)
    }

    @Test func growthWithinTheSlackIsFlat() throws {
        // A p99 of tens of ms: 20 → 35 ms is 1.75 times, yet 15 ms is a poll and a busy core, not growth.
        let small = try #require(SoakFlatness.judge("p99", [1, 20, 22, 30, 35], limit: 1.5, slack: 50))
        #expect(small.ratio == 1.75 && small.flat)
        #expect(small.text == "p99 20.0 → 35.0, ratio 1.75 (limit 1.50 or +50): flat")
        let large = try #require(SoakFlatness.judge("p99", [1, 200, 220, 300, 351], limit: 1.5, slack: 50))
        #expect(!large.flat)
    }

    @Test func tooShortOrZeroIsNotJudged() {
        #expect(SoakFlatness.judge("x", [5, 6], limit: 2) == nil)
        #expect(SoakFlatness.judge("x", [5, nil, 6], limit: 2) == nil)
        #expect(SoakFlatness.judge("x", [5, 0, 0, 3], limit: 2) == nil)
    }

    @Test func everySeriesOfTheMinutesIsJudged() {
        let minutes = (1...5).map { index in
            SoakMinute(
                index: index, seconds: 60, enqueued: 12_000, finished: 12_000, retries: 200, dead: 0,
                rssMebibytes: 100 + Double(index), workerCPUMicrosecondsPerJob: 150,
                postgresCPUMicrosecondsPerJob: index == 5 ? 300 : 100, enqueueToVerdictP50Milliseconds: 500,
                enqueueToVerdictP99Milliseconds: 2_000, notificationsSent: 1_200, notificationsFinal: 1_200,
                notificationsApplied: 1_200, arrivalToAppliedP99Milliseconds: nil
            )
        }
        let verdicts = SoakFlatness.judge(minutes)
        // No notification latency measured: four series.
        #expect(verdicts.map(\.series) == [
            "worker RSS (MiB)", "worker CPU per job (µs)", "PostgreSQL CPU per job (µs)", "enqueue → verdict p99 (ms)",
        ])
        #expect(verdicts.filter { !$0.flat }.map(\.series) == ["PostgreSQL CPU per job (µs)"])
    }

    @Test func cpuPerJobNeedsJobsAndAReading() {
        #expect(SoakMinute.perItem(0.3, items: 2_000) == 150)
        #expect(SoakMinute.perItem(0.3, items: 0) == nil)
        #expect(SoakMinute.perItem(nil, items: 10) == nil)
    }

    @Test func theRecorderCountsEachJobOnceEvenWhenItsVerdictComesFirst() {
        let recorder = SoakRecorder()
        let sent = ContinuousClock.now
        // Job 2's verdict is written before the enqueue statement returned its id.
        recorder.written(2, .verified, at: sent + .milliseconds(40))
        recorder.enqueued([1, 2, 3], sent: sent)
        recorder.written(1, .retry, at: sent + .milliseconds(100))
        recorder.written(1, .verified, at: sent + .milliseconds(1_100))
        recorder.written(3, .dead, at: sent + .milliseconds(2_000))
        // A job the run did not enqueue (an announced purchase's order) is not counted.
        recorder.written(99, .verified, at: sent)
        let interval = recorder.takeInterval(now: sent + .seconds(1))
        #expect(interval.enqueued == 3 && interval.finished == 3 && interval.verified == 2 && interval.dead == 1)
        #expect(interval.retries == 1)
        #expect(interval.latencies.sorted() == [40_000, 1_100_000, 2_000_000])
        #expect(recorder.openCount == 0 && recorder.totalEnqueued == 3)
        // The next interval starts empty; the stranger's verdict is forgotten after a minute.
        #expect(recorder.takeInterval(now: sent + .seconds(61)).finished == 0)
        recorder.enqueued([99], sent: sent + .seconds(61))
        #expect(recorder.openCount == 1)
    }
}
