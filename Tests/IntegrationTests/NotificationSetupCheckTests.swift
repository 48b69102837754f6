#if os(Linux)
import Crypto
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import Testing
import Workers

/// `receipt-worker notifications test`, the built binary against the fake App Store (which sends the TEST
/// notification to its notification URL, as Apple sends it to the URL App Store Connect holds), a real receiver and
/// real workers: each step that can fail, with its exit status, and the record `status` shows.
@Suite("notifications test: Apple's TEST notification through the receiver and a worker", .serialized, .ownThread)
struct NotificationSetupCheckTests {
    /// A harness whose fake App Store sends notifications to `port` on loopback.
    static func harness(notificationPort port: Int) throws -> Harness {
        var configuration = FakeAppStoreConfiguration()
        configuration.notificationURL = "http://127.0.0.1:\(port)/apple/notifications"
        return try Harness(fakeConfiguration: configuration)
    }

    static func run(_ h: Harness, _ arguments: [String], directory: String, environment extra: [String: String] = [:])
        async throws -> (status: Int32?, output: String, errors: String)
    {
        let environment = try SetAccountTokenTests.environment(h, directory: directory).merging(extra) { $1 }
        let child = try ChildProcess(["notifications", "test"] + arguments, environment: environment, separateErrors: true)
        let status = await child.exit(within: 120)
        return (status, child.output, child.errors)
    }

    static func status(_ h: Harness) async throws -> String {
        let environment = ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL])
        let child = try ChildProcess(["status"], environment: environment)
        _ = await child.exit(within: 60)
        return child.output
    }

    static func json(_ output: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
    }

    @Test("the whole path: Apple sends TEST, the receiver stores it, a worker applies it: exit 0, recorded, in status")
    func passes() async throws {
        let port = try freePort()
        let h = try Self.harness(notificationPort: port)
        let receiver = try Receiver(databaseURL: h.databaseURL, port: port)
        defer { receiver.child.signal(SIGKILL) }
        let workers = try h.startWorkers(1) { $0.drain = false }
        defer { for worker in workers { _ = worker.stop(waitingUpTo: 10) } }
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let done = try await Self.run(h, ["--environment", "sandbox", "--timeout", "60", "--json"], directory: directory)
        #expect(done.status == 0, "\(done.output) \(done.errors)")
        let report = try Self.json(done.output)
        #expect(report["result"] as? String == "passed", "\(report)")
        #expect(report["send_attempt_result"] as? String == "SUCCESS", "\(report)")
        #expect(report["notification_state"] as? String == "applied", "\(report)")
        #expect(report["environment"] as? String == "Sandbox")
        #expect(try h.scalar("SELECT notification_type || ' ' || source || ' ' || state FROM receipt_notifications")
            == "TEST receiver applied")
        #expect(try h.scalar("SELECT result || ' ' || send_attempt_result FROM receipt_notification_tests")
            == "passed SUCCESS")
        #expect(h.fake.apiStats().count("sandbox.request_test_notification", "200") == 1)

        let status = try await Self.status(h)
        let line = status.split(separator: "\n").first { $0.contains("Sandbox") && $0.contains("com.example.app") }
        #expect(line.map { !$0.contains("never") && $0.contains("-") } == true, "\(status)")
    }

    @Test("the receiver down: Apple's NO_RESPONSE named, exit 6 (not_delivered), recorded as the last failure")
    func receiverDown() async throws {
        let h = try Self.harness(notificationPort: try freePort())  // nothing listens there
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let done = try await Self.run(h, ["--timeout", "30", "--json"], directory: directory)
        #expect(done.status == 6, "\(done.output) \(done.errors)")
        let report = try Self.json(done.output)
        #expect(report["result"] as? String == "not_delivered", "\(report)")
        #expect(report["send_attempt_result"] as? String == "NO_RESPONSE", "\(report)")
        #expect((report["detail"] as? String)?.contains("NO_RESPONSE") == true, "\(report)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "0")
        #expect(try h.scalar("SELECT result || ' ' || send_attempt_result FROM receipt_notification_tests")
            == "not_delivered NO_RESPONSE")

        let text = try await Self.run(h, ["--timeout", "30"], directory: directory)
        #expect(text.status == 6)
        #expect(text.output.contains("FAILED at not_delivered") && text.output.contains("NO_RESPONSE"), "\(text.output)")
        let status = try await Self.status(h)
        #expect(status.contains("never") && status.contains("not_delivered (NO_RESPONSE)"), "\(status)")
    }

    @Test("no worker: the receiver stored it, nothing applied it within --timeout: exit 8 (not_applied)")
    func noWorker() async throws {
        let port = try freePort()
        let h = try Self.harness(notificationPort: port)
        let receiver = try Receiver(databaseURL: h.databaseURL, port: port)
        defer { receiver.child.signal(SIGKILL) }
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let done = try await Self.run(h, ["--timeout", "3", "--json"], directory: directory)
        #expect(done.status == 8, "\(done.output) \(done.errors)")
        let report = try Self.json(done.output)
        #expect(report["result"] as? String == "not_applied", "\(report)")
        #expect(report["notification_state"] as? String == "queued", "\(report)")
        #expect((report["detail"] as? String)?.contains("no worker applied it") == true, "\(report)")
        #expect(try h.scalar("SELECT state FROM receipt_notifications") == "queued")
        #expect(try h.scalar("SELECT result FROM receipt_notification_tests") == "not_applied")
    }

    @Test("delivered elsewhere: Apple's SUCCESS, but this database never stored it: exit 7 (not_stored)")
    func deliveredElsewhere() async throws {
        let port = try freePort()
        let h = try Self.harness(notificationPort: port)
        let other = try Harness()  // another deployment's database behind the URL
        let receiver = try Receiver(databaseURL: other.databaseURL, port: port)
        defer { receiver.child.signal(SIGKILL) }
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let done = try await Self.run(h, ["--timeout", "30", "--json"], directory: directory)
        #expect(done.status == 7, "\(done.output) \(done.errors)")
        #expect(try Self.json(done.output)["result"] as? String == "not_stored")
        #expect(try other.scalar("SELECT count(*) FROM receipt_notifications WHERE source = 'receiver'") == "1")
    }

    @Test("Apple refuses the key (401): exit 5 (apple_refused); no notifications URL at Apple (4040007): exit 5")
    func appleRefuses() async throws {
        let h = try Self.harness(notificationPort: try freePort())
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try P256.Signing.PrivateKey().pemRepresentation.write(
            toFile: directory + "/other.p8", atomically: true, encoding: .utf8
        )
        let refused = try await Self.run(
            h, ["--json"], directory: directory, environment: ["APPSTORE_PRIVATE_KEY_FILE": directory + "/other.p8"]
        )
        #expect(refused.status == 5, "\(refused.output) \(refused.errors)")
        let report = try Self.json(refused.output)
        #expect(report["result"] as? String == "apple_refused", "\(report)")
        #expect((report["detail"] as? String)?.contains("APPSTORE_KEY_ID") == true, "\(report)")
        #expect(h.fake.apiStats().count("production.request_test_notification", "401") == 1)

        let bare = try Harness()  // a fake App Store with no notification URL: App Store Connect holds none
        let directory2 = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory2) }
        let noURL = try await Self.run(bare, ["--json"], directory: directory2)
        #expect(noURL.status == 5, "\(noURL.output) \(noURL.errors)")
        #expect((try Self.json(noURL.output)["detail"] as? String)?.contains("4040007") == true, "\(noURL.output)")
    }
}
#endif
