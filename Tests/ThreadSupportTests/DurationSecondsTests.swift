import Testing
import ThreadSupport

@Suite("Duration in seconds")
struct DurationSecondsTests {
    @Test("whole and fractional seconds, negative durations included")
    func seconds() {
        #expect(Duration.seconds(3).seconds == 3)
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.nanoseconds(1).seconds == 1e-9)
        #expect(Duration.milliseconds(-250).seconds == -0.25)
    }
}
