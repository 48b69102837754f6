import Testing
import Workers

@Suite("RetryPolicy")
struct RetryPolicyTests {
    let policy = RetryPolicy()  // 30 s doubling to 1 h, 80 attempts

    @Test("the defaults the README documents")
    func defaults() {
        #expect(policy.baseSeconds == 30)
        #expect(policy.maxSeconds == 3600)
        #expect(policy.maxAttempts == 80)
        #expect(policy.malformedDataAttempts == 3)
    }

    @Test("the delay's ceiling doubles with each attempt, then stays at maxSeconds", arguments: [
        (1, 30.0), (2, 60), (3, 120), (4, 240), (5, 480), (6, 960), (7, 1920), (8, 3600), (9, 3600), (80, 3600),
        (10_000, 3600), (Int.max, 3600),
    ] as [(Int, Double)])
    func doubling(attempt: Int, ceiling: Double) {
        #expect(policy.delay(afterAttempt: attempt, random: 1) == ceiling, "attempt \(attempt)")
        #expect(policy.delay(afterAttempt: attempt, random: 0) == ceiling / 2, "attempt \(attempt)")
    }

    @Test("an attempt below 1 counts as the first", arguments: [0, -1, -1000])
    func belowOne(attempt: Int) {
        #expect(policy.delay(afterAttempt: attempt, random: 1) == 30)
    }

    @Test("equal jitter: half fixed, half random, increasing with random, within [ceiling/2, ceiling]")
    func jitterBounds() {
        for attempt in [1, 4, 12] {
            let ceiling = min(3600, 30 * Double(1 << (attempt - 1)))
            var previous = -Double.infinity
            for step in 0...100 {
                let random = Double(step) / 100
                let delay = policy.delay(afterAttempt: attempt, random: random)
                #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt), random \(random): \(delay)")
                #expect(delay >= previous)
                previous = delay
            }
            #expect(policy.delay(afterAttempt: attempt, random: 0.5) == ceiling * 0.75)
        }
    }

    @Test("random outside 0...1 is clamped",
          arguments: [(-1.0, 15.0), (2, 30), (-.infinity, 15), (.infinity, 30)] as [(Double, Double)])
    func clamped(random: Double, expected: Double) {
        #expect(policy.delay(afterAttempt: 1, random: random) == expected)
    }

    @Test("Retry-After is honoured when longer than the backoff")
    func retryAfterLonger() {
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: 120, random: 1) == 120)
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: 120, random: 0) == 120)
        #expect(policy.delay(afterAttempt: 9, retryAfterSeconds: 7200, random: 0) == 7200)
    }

    @Test("a shorter Retry-After does not shorten the backoff")
    func retryAfterShorter() {
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: 7, random: 1) == 30)
        #expect(policy.delay(afterAttempt: 8, retryAfterSeconds: 7, random: 0) == 1800)
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: 0, random: 0) == 15)
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: -50, random: 0) == 15)
    }

    @Test("Retry-After is never honoured beyond a day", arguments: [86_401.0, 7 * 86_400, 1e300] as [Double])
    func retryAfterCapped(retryAfter: Double) {
        #expect(policy.delay(afterAttempt: 1, retryAfterSeconds: retryAfter, random: 1) == 86_400)
    }

    @Test("a Retry-After that is not a finite number is ignored", arguments: [Double.nan, .infinity, -.infinity])
    func retryAfterNotFinite(retryAfter: Double) {
        #expect(policy.delay(afterAttempt: 2, retryAfterSeconds: retryAfter, random: 1) == 60)
    }

    @Test("the defaults keep retrying for about three days")
    func retryWindow() {
        let days = policy.retryWindowSeconds / 86_400
        #expect(days > 2.5 && days < 3.5, "\(days) days")
        // 30+60+…+1920 = 3810 for attempts 1–7, then 72 delays of an hour (attempts 8–79; the 80th is the last).
        #expect(policy.retryWindowSeconds == 3810 + 72 * 3600)
    }

    @Test("one attempt: no retry window; the window is the sum of the capped delays")
    func retryWindowSmall() {
        #expect(RetryPolicy(maxAttempts: 1).retryWindowSeconds == 0)
        #expect(RetryPolicy(maxAttempts: 2).retryWindowSeconds == 30)
        #expect(RetryPolicy(baseSeconds: 10, maxSeconds: 25, maxAttempts: 5).retryWindowSeconds == 10 + 20 + 25 + 25)
    }

    @Test("validate accepts the defaults and the boundaries: a zero base, the cap equal to the base, one attempt")
    func validateAccepts() {
        #expect(throws: Never.self) { try RetryPolicy().validate() }
        #expect(throws: Never.self) { try RetryPolicy(baseSeconds: 0, maxSeconds: 0, maxAttempts: 1).validate() }
        #expect(throws: Never.self) { try RetryPolicy(baseSeconds: 30, maxSeconds: 30).validate() }
        // A zero base means no waiting at all, whatever the attempt and the draw.
        let immediate = RetryPolicy(baseSeconds: 0, maxSeconds: 0, maxAttempts: 1)
        #expect(immediate.delay(afterAttempt: 1, random: 0.99) == 0)
        #expect(immediate.delay(afterAttempt: 40, random: 0.5) == 0)
    }

    @Test("validate names the setting that is wrong", arguments: [
        (RetryPolicy(baseSeconds: -1), "RETRY_BASE_SECONDS"),
        (RetryPolicy(baseSeconds: 60, maxSeconds: 30), "RETRY_MAX_SECONDS"),
        (RetryPolicy(baseSeconds: .nan), "RETRY_BASE_SECONDS"),
        (RetryPolicy(maxAttempts: 0), "MAX_ATTEMPTS"),
        (RetryPolicy(maxAttempts: -3), "MAX_ATTEMPTS"),
    ])
    func validateRejects(policy: RetryPolicy, setting: String) {
        let error = #expect(throws: WorkerConfigurationError.self) { try policy.validate() }
        #expect(error?.description.contains(setting) == true, "\(String(describing: error))")
    }

    @Test("validate's error carries the setting, for callers that map it", arguments: [
        (RetryPolicy(baseSeconds: -1), "RETRY_BASE_SECONDS"),
        (RetryPolicy(baseSeconds: 60, maxSeconds: 30), "RETRY_MAX_SECONDS"),
        (RetryPolicy(maxAttempts: 0), "MAX_ATTEMPTS"),
    ])
    func validateNamesSetting(policy: RetryPolicy, setting: String) {
        let error = #expect(throws: WorkerConfigurationError.self) { try policy.validate() }
        #expect(error?.code == .outOfRange)
        #expect(error?.setting == setting)
    }
}
