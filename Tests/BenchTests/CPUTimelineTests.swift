import Testing

@testable import Bench

/// The CPU of each phase of a drain comes from readings taken every 0.1 s, interpolated at the phases' bounds.
@Suite struct CPUTimelineTests {
    private let timeline = CPUTimeline(samples: [
        (0.0, CPUReading(worker: 1.0, fakeAppStore: 10.0, postgres: 100.0)),
        (1.0, CPUReading(worker: 2.0, fakeAppStore: 10.5, postgres: 100.0)),
        (2.0, CPUReading(worker: 2.0, fakeAppStore: 11.5, postgres: 101.0)),
    ])

    @Test func betweenTwoReadingsIsInterpolated() throws {
        let reading = try #require(timeline.reading(at: 0.25))
        #expect(reading == CPUReading(worker: 1.25, fakeAppStore: 10.125, postgres: 100.0))
    }

    @Test func aPhaseUsesWhatEachPartUsedBetweenItsBounds() throws {
        let used = try #require(timeline.used(from: 0.5, to: 1.5))
        #expect(used == CPUReading(worker: 0.5, fakeAppStore: 0.75, postgres: 0.5))
    }

    @Test func outsideTheReadingsIsUnknown() {
        #expect(timeline.reading(at: -0.1) == nil)
        #expect(timeline.used(from: 1.0, to: 2.5) == nil)
    }

    @Test func aPartNotReadAtBothEndsIsLeftOut() throws {
        let partial = CPUTimeline(samples: [
            (0.0, CPUReading(worker: 1.0, fakeAppStore: nil, postgres: 5.0)),
            (1.0, CPUReading(worker: 3.0, fakeAppStore: 2.0, postgres: 6.0)),
        ])
        let used = try #require(partial.used(from: 0.0, to: 1.0))
        #expect(used == CPUReading(worker: 2.0, fakeAppStore: nil, postgres: 1.0))
    }

    @Test func phasesCarryTheirCPU() throws {
        let start = ContinuousClock.now
        let timeline = CPUTimeline(samples: [
            (0.0, CPUReading(worker: 0, fakeAppStore: 0, postgres: 0)),
            (4.0, CPUReading(worker: 4, fakeAppStore: 2, postgres: 8)),
        ])
        let phases = try #require(BenchRun.phases(
            workerStart: start, span: (start + .seconds(1), start + .seconds(4)),
            calls: (lastStarted: start + .seconds(1), lastAnswered: start + .seconds(3)),
            sent: start + .seconds(2), answered: start + .seconds(3), cpu: (timeline, start)
        ))
        #expect(phases.cpuFirstClaimToLastSend == CPUReading(worker: 1, fakeAppStore: 0.5, postgres: 2))
        #expect(phases.cpuLastSendToLastAnswer == CPUReading(worker: 1, fakeAppStore: 0.5, postgres: 2))
        #expect(phases.cpuLastAnswerToLastVerdict == CPUReading(worker: 1, fakeAppStore: 0.5, postgres: 2))
        let text = try #require(phases.cpuText)
        #expect(text.contains("first claim → last send: worker 1.00, fake App Store 0.50, PostgreSQL 2.00 s"))
    }

    @Test func coresBusyAddsThePartsPerStep() {
        // 0–1 s: worker 1.0 + fake 0.5 = 1.5 cores; 1–2 s: fake 1.0 + PostgreSQL 1.0 = 2.0 cores.
        #expect(timeline.coresBusy(from: 0, to: 2, step: 0.5) == [1.5, 1.5, 2.0, 2.0])
        // A last step shorter than the others is per its own length; a step past the readings ends the list.
        #expect(timeline.coresBusy(from: 0.5, to: 1.25, step: 0.5) == [1.5, 2.0])
        #expect(timeline.coresBusy(from: 1.5, to: 3, step: 0.5) == [2.0])
        #expect(timeline.coresBusy(from: 1, to: 1, step: 0.5).isEmpty)
        #expect(timeline.coresBusy(from: 0, to: 1, step: 0).isEmpty)
    }

    @Test func coresBusyNamesThePartsItAdds() {
        #expect(timeline.partsRead(worker: "worker") == ["worker", "fake App Store", "PostgreSQL"])
        let withoutPostgres = CPUTimeline(samples: [
            (0.0, CPUReading(worker: 1.0, fakeAppStore: nil, postgres: nil)),
            (1.0, CPUReading(worker: 2.0, fakeAppStore: nil, postgres: 5.0)),
        ])
        #expect(withoutPostgres.partsRead(worker: "worker and fake App Store") == ["worker and fake App Store"])
        #expect(CPUTimeline(samples: []).partsRead(worker: "worker").isEmpty)
    }

    @Test func coresBusyStepKeepsTheLineShort() {
        #expect(BenchRun.coresBusyStep(drainSeconds: 4.7) == 0.25)
        #expect(BenchRun.coresBusyStep(drainSeconds: 10) == 0.25)
        #expect(BenchRun.coresBusyStep(drainSeconds: 60) == 1.5)
        #expect(BenchRun.coresBusyStep(drainSeconds: .infinity) == 0.25)
    }
}
