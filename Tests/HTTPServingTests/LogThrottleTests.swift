import NIOCore
import Testing

@testable import HTTPServing

@Suite("LogThrottle: the first event at once, then at most one line per interval with the count since")
struct LogThrottleTests {
    @Test("a stream of events is one line per interval, each with the events since the last")
    func throttles() {
        var throttle = LogThrottle(interval: .seconds(60))
        let start = NIODeadline.now()
        #expect(throttle.count(now: start) == 1)
        for second in 1...59 {
            #expect(throttle.count(now: start + .seconds(Int64(second))) == nil)
        }
        #expect(throttle.count(now: start + .seconds(60)) == 60, "the 59 held back and this one")
        #expect(throttle.count(now: start + .seconds(61)) == nil)
        #expect(throttle.count(now: start + .seconds(200)) == 2)
    }
}
