#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import LocalPostgres
import LoopbackHTTP
import PostgresClient
import ReceiptQueue
import Synchronization
import Testing

/// The real `receipt-worker notifications` process: Apple's body stored once and answered 200 only once committed,
/// bad input refused with the status and reason decided, the database's outage answered 503 until it is back.
@Suite("The notification receiver", .serialized, .ownThread)
struct NotificationReceiverTests {
    @Test("a notification is stored once with source 'receiver'; the same body again is 200 and still one row")
    func storesOnce() throws {
        let h = try Harness()
        let payload = try Self.notification(h)
        let receiver = try Receiver(databaseURL: h.databaseURL)
        defer { receiver.child.signal(SIGKILL) }

        let first = try receiver.post(Self.body(payload))
        #expect(first.status == 200, "\(first.text)")
        let rows = "SELECT count(*) FROM receipt_notifications WHERE signed_payload = $1 AND source = 'receiver'"
        #expect(try h.scalar(rows, [payload]) == "1")
        let again = try receiver.post(Self.body(payload))
        #expect(again.status == 200, "\(again.text)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "1")
        #expect(try h.scalar("SELECT state FROM receipt_notifications") == "queued")

        let id = try #require(try h.scalar("SELECT id FROM receipt_notifications"))
        #expect(receiver.child.output.contains("id=\(id)"), "a line per notification stored: \(receiver.child.output)")
        #expect(!receiver.child.output.contains(payload.prefix(40)), "the payload is never logged")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("bad input: 400 with a reason, 413 past 64 KiB (and still serving), 405; alg none is stored for the workers")
    func badInput() throws {
        let h = try Harness()
        let receiver = try Receiver(databaseURL: h.databaseURL)
        defer { receiver.child.signal(SIGKILL) }

        let refusals: [(body: String, reason: String)] = [
            ("", "empty body"),
            ("signedPayload=abc.def.ghi", "the body is not JSON"),
            (#"{"payload": "abc.def.ghi"}"#, "the body has no signedPayload"),
            (#"{"signedPayload": 7}"#, "signedPayload is not a string"),
            (#"{"signedPayload": ""}"#, "signed_payload is empty"),
            (#"{"signedPayload": "abc.def"}"#, "not a JWS in compact form"),
            // alg none without a signature part: not three base64url parts.
            (Self.body(Self.algNone(signature: "")), "not a JWS in compact form"),
        ]
        for refusal in refusals {
            let answer = try receiver.post(refusal.body)
            #expect(answer.status == 400, "\(refusal.body): \(answer.status) \(answer.text)")
            #expect(answer.text.contains(refusal.reason), "\(refusal.body): \(answer.text)")
            #expect(answer.text.filter { $0 == "\n" }.count == 1, "one line: \(answer.text)")
        }

        // 10 MB: refused as soon as the head says so; the body is read and dropped, then the connection closes.
        let client = try LoopbackHTTPClient(port: receiver.port, readTimeoutSeconds: 30)
        let large = try client.request("POST", "/", body: Data(count: 10 << 20))
        #expect(large.status == 413, "\(large.text)")
        #expect(large.headers["connection"] == "close")
        #expect(client.awaitClose() != .timeout, "the connection is closed after a 413")
        // A body over the limit without a Content-Length (chunked): 413 as soon as it passes 64 KiB.
        let chunk = String(repeating: "a", count: 40_000)
        let chunked = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "9c40\r\n\(chunk)\r\n9c40\r\n\(chunk)\r\n0\r\n\r\n"
        let answers = try LoopbackHTTPClient.exchange(port: receiver.port, chunked)
        #expect(answers.map(\.status) == [413])

        #expect(try LoopbackHTTPClient.get("/", port: receiver.port).status == 405)
        #expect(try LoopbackHTTPClient.get("/healthz", port: receiver.port, method: "POST").status == 405)
        #expect(try LoopbackHTTPClient.get("/healthz", port: receiver.port).status == 200)
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "0")

        // Shape-valid but unsigned: stored (the workers verify it, and will reject it).
        let unsigned = Self.algNone(signature: "c2lnbmF0dXJl")
        let stored = try receiver.post(Self.body(unsigned))
        #expect(stored.status == 200, "\(stored.text)")
        // Still serving after all that.
        let good = try receiver.post(Self.body(try Self.notification(h)))
        #expect(good.status == 200, "\(good.text)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE source = 'receiver'") == "2")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE signed_payload = $1", [unsigned]) == "1")

        let output = receiver.child.output
        #expect(output.components(separatedBy: "notification refused").count - 1 == refusals.count + 2, "\(output)")
        #expect(!output.contains(unsigned.prefix(30)), "the payload is never logged")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("PostgreSQL stopped: 503 (Apple retries); started again: 200 on a new connection; SIGINT exits 0")
    func databaseOutage() throws {
        let cluster = try LocalPostgresCluster.start()
        defer { cluster.stop() }
        let url = try cluster.createDatabase("rw_notifications")
        let db = try PostgresConnection(url)
        defer { db.close() }
        try Migrator(directory: TestServer.sqlDirectory).migrate(db)
        let receiver = try Receiver(databaseURL: url)
        defer { receiver.child.signal(SIGKILL) }

        let before = Self.algNone(signature: "YmVmb3Jl")
        #expect(try receiver.post(Self.body(before)).status == 200)
        try cluster.stopServer(mode: "fast")
        let during = Self.algNone(signature: "ZHVyaW5n")
        let refused = try receiver.post(Self.body(during))
        #expect(refused.status == 503, "\(refused.text)")
        #expect(try receiver.post(Self.body(during)).status == 503, "still down")
        try cluster.startServer()
        let retried = try receiver.post(Self.body(during))
        #expect(retried.status == 200, "\(retried.text) \(receiver.child.output)")
        db.close()
        let check = try PostgresConnection(url)
        defer { check.close() }
        let count = try check.query(
            "SELECT count(*) FROM receipt_notifications WHERE signed_payload IN ($1, $2)", [before, during]
        )
        #expect(count.rows.first?.first == "2")
        #expect(receiver.child.output.contains("notification not stored"), "\(receiver.child.output)")
        receiver.child.signal(SIGINT)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("a database that hangs holds NOTIFICATIONS_MAX_WAITING notifications; the next is 503 at once; all stored after")
    func boundedWhileDatabaseHangs() throws {
        let h = try Harness()
        let receiver = try Receiver(databaseURL: h.databaseURL, environment: ["NOTIFICATIONS_MAX_WAITING": "2"])
        defer { receiver.child.signal(SIGKILL) }
        // A session that keeps every insert into receipt_notifications waiting.
        let locker = try PostgresConnection(h.databaseURL)
        defer { locker.close() }
        _ = try locker.query("BEGIN")
        _ = try locker.query("LOCK TABLE receipt_notifications IN EXCLUSIVE MODE")

        let held = [Self.algNone(signature: "aGVsZC0x"), Self.algNone(signature: "aGVsZC0y")]
        let answers = Mutex<[Int]>([])
        let group = DispatchGroup()
        let port = receiver.port
        for payload in held {
            DispatchQueue.global().async(group: group) {
                let status = (try? Receiver.post(Self.body(payload), port: port))?.status ?? -1
                answers.withLock { $0.append(status) }
            }
        }
        // Both are in the database's hands (one on each of the receiver's two connections), waiting for the lock.
        let waitingOnLock = """
            SELECT count(*) FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%receive_notification%' AND pid <> pg_backend_pid()
            """
        #expect(try h.waitUntil(60) { try h.scalar(waitingOnLock) == "2" })
        let refused = try receiver.post(Self.body(Self.algNone(signature: "YnVzeQ")))
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.text.contains("busy"), "\(refused.text)")
        #expect(answers.withLock { $0 }.isEmpty, "the held notifications were answered while the lock was held")

        _ = try locker.query("COMMIT")
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(answers.withLock { $0 } == [200, 200])
        #expect(try receiver.post(Self.body(Self.algNone(signature: "YWZ0ZXI"))).status == 200)
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "3")
        #expect(receiver.child.output.contains("at the limit"), "\(receiver.child.output)")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }

    @Test("NOTIFICATIONS_PORT missing or out of range is a configuration error (exit 2) that names it")
    func configuration() throws {
        let environment = ChildProcess.environment(
            removing: ["NOTIFICATIONS_PORT", "NOTIFICATIONS_HOST"],
            setting: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"]
        )
        let missing = try ChildProcess(["notifications"], environment: environment)
        #expect(missing.wait(timeout: 30) == 2)
        #expect(missing.output.contains("NOTIFICATIONS_PORT is not set"), "\(missing.output)")
        let outOfRange = try ChildProcess(["notifications", "--notifications-port", "70000"], environment: environment)
        #expect(outOfRange.wait(timeout: 30) == 2)
        #expect(outOfRange.output.contains("NOTIFICATIONS_PORT must be at most 65535"), "\(outOfRange.output)")
    }

    // MARK: Helpers

    /// A real notification signed by the fake App Store (a REFUND of a purchase added for it).
    static func notification(_ h: Harness) throws -> String {
        let purchase = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "pro.monthly")])
        return try h.fake.purchases.recordNotification(type: "REFUND", transactionId: purchase[0].transactionId)
    }

    static func body(_ payload: String) -> String {
        #"{"signedPayload": "\#(payload)"}"#
    }

    /// An unsigned JWS (`"alg": "none"`) with `signature` as its third part.
    static func algNone(signature: String) -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"none"}"#) + "."
            + part(#"{"notificationType":"REFUND","notificationUUID":"\#(UUID().uuidString)"}"#) + "." + signature
    }
}

/// `receipt-worker notifications` on a free loopback port, answering /healthz.
struct Receiver {
    let child: ChildProcess
    let port: Int

    /// `fileLimit`: `ulimit` options the receiver runs under (`-S -n 1024`: a soft open-files limit of 1,024), set by
    /// a shell that then becomes the receiver.
    /// `port`: the port to listen on (a free one by default).
    init(
        databaseURL: String, environment extra: [String: String] = [:], fileLimit: String? = nil, port: Int? = nil
    ) throws {
        self.port = try port ?? freePort()
        let arguments = ["notifications", "--notifications-port", String(self.port)]
        let environment = ChildProcess.environment(
            removing: ["LOG_FORMAT", "LOG_LEVEL"],
            setting: ["DATABASE_URL": databaseURL, "NOTIFICATIONS_HOST": "127.0.0.1"].merging(extra) { $1 }
        )
        if let fileLimit {
            child = try ChildProcess(
                ["-c", "ulimit \(fileLimit) && exec \"$0\" \"$@\"", try ChildProcess.executable()] + arguments,
                executable: "/bin/sh", environment: environment
            )
        } else {
            child = try ChildProcess(arguments, environment: environment)
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while (try? LoopbackHTTPClient.get("/healthz", port: self.port))?.status != 200 {
            guard Date() < deadline, child.wait(timeout: 0) == nil else {
                throw TestSetupError("the receiver did not start: \(child.output)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// POSTs `body` to / on a connection of its own.
    func post(_ body: String) throws -> LoopbackHTTPClient.Response {
        try Self.post(body, port: port)
    }

    static func post(_ body: String, port: Int) throws -> LoopbackHTTPClient.Response {
        let client = try LoopbackHTTPClient(port: port, readTimeoutSeconds: 30)
        defer { client.close() }
        return try client.request(
            "POST", "/", body: Data(body.utf8), headers: [("Content-Type", "application/json")]
        )
    }
}
#endif
