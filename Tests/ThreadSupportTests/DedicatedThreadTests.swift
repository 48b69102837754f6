import Foundation
import Testing
import ThreadSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("DedicatedThread")
struct DedicatedThreadTests {
    @Test("the body runs on a thread of its own, and join waits for it to end")
    func runsAndJoins() throws {
        let seen = ConditionLock<(ran: Bool, isCurrent: Bool)>((false, false))
        let started = ConditionLock<DedicatedThread?>(nil)
        let thread = try DedicatedThread.start(name: "test-body") {
            let me = started.wait { $0 }
            usleep(20_000)
            seen.withLock { $0 = (true, me.isCurrent) }
        }
        started.withLock { $0 = thread }
        #expect(!thread.isCurrent)
        thread.join()
        #expect(seen.withLock { $0.ran })
        #expect(seen.withLock { $0.isCurrent })
    }

    #if os(Linux)
    @Test("the thread carries its name, cut to the 15 bytes Linux keeps")
    func name() throws {
        let name = ConditionLock<String?>(nil)
        let thread = try DedicatedThread.start(name: "a-rather-long-thread-name") {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            name.withLock { $0 = comm?.trimmingCharacters(in: .newlines) ?? "" }
        }
        thread.join()
        #expect(name.wait { $0 } == "a-rather-long-t")
    }
    #endif

    @Test("a stack size the system refuses is reported, not ignored")
    func badStackSize() {
        #expect(throws: ThreadError.self) {
            try DedicatedThread.start(name: "test-stack", stackSize: 1) {}.join()
        }
    }
}
