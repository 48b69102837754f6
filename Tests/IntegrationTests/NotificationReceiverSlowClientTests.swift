#if os(Linux)
import CurlHTTP
import Foundation
import Glibc
import LoopbackHTTP
import Testing

/// Issue 36, attack 2, on the real `receipt-worker notifications` process: 1,100 connections that send nothing or
/// half a request line and stop. The receiver raises its soft open-files limit, answers a genuine POST while holding
/// them, closes each at the header timeout, and past its connection cap closes new connections at once.
@Suite("The notification receiver under slow clients", .serialized, .ownThread)
struct NotificationReceiverSlowClientTests {
    static let slowClients = 1_100
    /// Short timeouts, so the test sees the server close the slow connections.
    static let timeouts = [
        "NOTIFICATIONS_HEADER_TIMEOUT_SECONDS": "8", "NOTIFICATIONS_BODY_TIMEOUT_SECONDS": "8",
        "NOTIFICATIONS_IDLE_TIMEOUT_SECONDS": "8",
    ]

    @Test("soft limit 1,024: a POST is answered while 1,100 slow connections are held; they close at the timeout")
    func softLimit() throws {
        try Self.requireFiles()
        let h = try Harness()
        let receiver = try Receiver(databaseURL: h.databaseURL, environment: Self.timeouts, fileLimit: "-S -n 1024")
        defer { receiver.child.signal(SIGKILL) }
        #expect(receiver.child.output.contains("max_connections=4096"), "\(receiver.child.output)")
        let cpuBefore = try Self.cpuSeconds(receiver.child.pid)

        let slow = try Self.openSlowClients(port: receiver.port)
        let posted = ContinuousClock.now
        let answer = try receiver.post(Self.notification("Z2VudWluZQ"))
        let took = ContinuousClock.now - posted
        #expect(answer.status == 200, "\(answer.text)")
        // Within a second on an idle machine; 5 s leaves room for a loaded one (unprotected, it timed out past 10 s).
        #expect(took < .seconds(5), "the genuine POST took \(took)")
        #expect(slow.filter { $0.isOpen }.count == Self.slowClients, "slow connections closed before their timeout")

        let notClosed = Self.stillOpen(slow, after: .seconds(40))
        #expect(notClosed == 0, "\(notClosed) slow connections were not closed by the receiver")
        #expect(try Self.cpuSeconds(receiver.child.pid) - cpuBefore < 3, "the receiver spun while holding them")
        #expect(try receiver.post(Self.notification("YWZ0ZXI")).status == 200)
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "2")
        #expect(!receiver.child.output.contains("at the cap"), "\(receiver.child.output)")
        print("genuine POST under \(Self.slowClients) slow connections answered in \(took)")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("hard limit 1,024: the cap is 960; the 140 beyond it are closed at once, with one warning; no spin")
    func hardLimit() throws {
        try Self.requireFiles()
        let h = try Harness()
        let receiver = try Receiver(databaseURL: h.databaseURL, environment: Self.timeouts, fileLimit: "-n 1024")
        defer { receiver.child.signal(SIGKILL) }
        let output = receiver.child.output
        #expect(output.contains("the open-files limit allows fewer connections"), "\(output)")
        let cpuBefore = try Self.cpuSeconds(receiver.child.pid)

        let slow = try Self.openSlowClients(port: receiver.port)
        Thread.sleep(forTimeInterval: 1)
        let closedAtOnce = slow.filter { !$0.isOpen }.count
        #expect(closedAtOnce == Self.slowClients - 960, "closed within a second: \(closedAtOnce)")

        let notClosed = Self.stillOpen(slow, after: .seconds(40))
        #expect(notClosed == 0, "\(notClosed) slow connections were not closed by the receiver")
        #expect(try Self.cpuSeconds(receiver.child.pid) - cpuBefore < 3, "the receiver spun at its cap")
        // Places free again: a genuine POST is answered.
        let answer = try receiver.post(Self.notification("aGFyZA"))
        #expect(answer.status == 200, "\(answer.text)")
        let warnings = receiver.child.output.components(separatedBy: "\n").filter { $0.contains("at the cap") }
        #expect(warnings.count == 1, "\(receiver.child.output)")
        #expect(warnings.first?.contains("max_connections=960") == true, "\(warnings)")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("a cap the open-files limit cannot carry, or a timeout out of range, is a configuration error (exit 2)")
    func configuration() throws {
        let environment = ChildProcess.environment(
            setting: [
                "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "NOTIFICATIONS_PORT": "0",
                "NOTIFICATIONS_MAX_CONNECTIONS": "5000",
            ]
        )
        let script = "ulimit -n 1024 && exec \"$0\" notifications"
        let tooMany = try ChildProcess(
            ["-c", script, try ChildProcess.executable()], executable: "/bin/sh", environment: environment
        )
        #expect(tooMany.wait(timeout: 30) == 2)
        #expect(
            tooMany.output.contains("NOTIFICATIONS_MAX_CONNECTIONS 5000 needs about 5064 open files"),
            "\(tooMany.output)"
        )
        #expect(tooMany.output.contains("may open 1024"), "\(tooMany.output)")

        var zero = environment
        zero["NOTIFICATIONS_MAX_CONNECTIONS"] = nil
        zero["NOTIFICATIONS_HEADER_TIMEOUT_SECONDS"] = "0"
        let noTimeout = try ChildProcess(["notifications"], environment: zero)
        #expect(noTimeout.wait(timeout: 30) == 2)
        #expect(
            noTimeout.output.contains("NOTIFICATIONS_HEADER_TIMEOUT_SECONDS must be at least 0.1"),
            "\(noTimeout.output)"
        )
    }

    // MARK: Helpers

    /// This test process opens 1,100 sockets: its own soft limit is raised, and must allow them.
    static func requireFiles() throws {
        let limit = OpenFileLimit.raiseToHardLimit()
        try #require(
            limit >= slowClients + 300, "the test needs \(slowClients + 300) open files; this process may open \(limit)"
        )
    }

    /// `slowClients` connections: every other one sends nothing, the rest half a request head, and then stop.
    static func openSlowClients(port: Int) throws -> [LoopbackHTTPClient] {
        try (0..<slowClients).map { index in
            let client = try LoopbackHTTPClient(port: port, readTimeoutSeconds: 60)
            if index % 2 == 1 { try client.send("POST / HTTP/1.1\r\nHost: x\r\n") }
            return client
        }
    }

    /// Waits until the receiver has closed each of `clients` (it reads end of stream or a reset), or `timeout`
    /// passes; returns how many are open still.
    static func stillOpen(_ clients: [LoopbackHTTPClient], after timeout: Duration) -> Int {
        let deadline = ContinuousClock.now + timeout
        var open = clients
        while !open.isEmpty, ContinuousClock.now < deadline {
            open = open.filter { $0.isOpen }
            if !open.isEmpty { Thread.sleep(forTimeInterval: 0.1) }
        }
        return open.count
    }

    static func notification(_ signature: String) -> String {
        NotificationReceiverTests.body(NotificationReceiverTests.algNone(signature: signature))
    }

    /// User and system CPU time `pid` has used, from /proc.
    static func cpuSeconds(_ pid: pid_t) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // After the command name in parentheses: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
#endif
