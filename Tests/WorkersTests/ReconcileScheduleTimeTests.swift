import Testing
import Workers

/// RECONCILE_AT's value: a time of day HH:MM, 24 hours, and nothing else.
@Suite("RECONCILE_AT: the time of day")
struct ReconcileScheduleTimeTests {
    @Test("HH:MM from 00:00 to 23:59 is taken as given")
    func valid() {
        for text in ["00:00", "09:00", "12:30", "23:59"] {
            #expect(ReconcileSchedule.timeOfDay(text) == text)
        }
    }

    @Test("anything else is refused: out of range, one digit, seconds, words, other digits")
    func invalid() {
        for text in ["24:00", "12:60", "9:00", "09:0", "09:00:00", "9am", "", ":", "0900", "-1:00", "+9:00", "٠٩:٠٠",
                     "09:00 ", " 09:00"] {
            #expect(ReconcileSchedule.timeOfDay(text) == nil, "\(text)")
        }
    }
}
