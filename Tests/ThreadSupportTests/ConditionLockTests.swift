import Testing
import ThreadSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("ConditionLock: a value handed between threads")
struct ConditionLockTests {
    @Test("a wait whose condition already holds returns at once, with the value")
    func alreadyThere() {
        let lock = ConditionLock<Int?>(7)
        #expect(lock.wait { $0 } == 7)
        #expect(lock.wait(until: { $0 == 7 }, timeout: .zero))
    }

    @Test("a value set on another thread ends the wait")
    func handOver() throws {
        let lock = ConditionLock<String?>(nil)
        let thread = try DedicatedThread.start(name: "test-setter") {
            usleep(50_000)
            lock.withLock { $0 = "answer" }
        }
        defer { thread.join() }
        #expect(lock.wait { $0 } == "answer")
    }

    @Test("a timed wait gives up after its timeout, and not much later")
    func timeout() {
        let lock = ConditionLock(false)
        let clock = ContinuousClock()
        var held = true
        let elapsed = clock.measure { held = lock.wait(until: { $0 }, timeout: .milliseconds(100)) }
        #expect(!held)
        #expect(elapsed >= .milliseconds(100))
        #expect(elapsed < .seconds(60))
        #expect(lock.wait(for: { $0 ? () : nil }, timeout: .milliseconds(10)) == nil)
    }

    @Test("changes that do not satisfy the condition do not end the wait")
    func keepsWaiting() throws {
        let lock = ConditionLock(0)
        let thread = try DedicatedThread.start(name: "test-counter") {
            for _ in 0..<5 {
                usleep(10_000)
                lock.withLock { $0 += 1 }
            }
        }
        defer { thread.join() }
        #expect(lock.wait(for: { $0 >= 5 ? $0 : nil }) == 5)
    }

    @Test("the value taken in a wait is taken once: each of many waiters gets its own")
    func manyWaiters() throws {
        let lock = ConditionLock<[Int]>([])
        let received = ConditionLock<[Int]>([])
        let waiters = try (0..<4).map { index in
            try DedicatedThread.start(name: "test-waiter-\(index)") {
                let value = lock.wait { $0.isEmpty ? nil : $0.removeFirst() }
                received.withLock { $0.append(value) }
            }
        }
        for value in 1...4 {
            usleep(5_000)
            lock.withLock { $0.append(value) }
        }
        for waiter in waiters { waiter.join() }
        #expect(received.withLock { $0.sorted() } == [1, 2, 3, 4])
        #expect(lock.withLock { $0 }.isEmpty)
    }
}
