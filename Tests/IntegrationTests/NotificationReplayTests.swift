#if os(Linux)
import FakeAppStore
import Foundation
import Testing

/// `receipt-worker notifications-replay` against the fake App Store's Get Notification History: every page read,
/// every notification stored once with source 'history', a second run adding nothing.
@Suite("Notification History replay", .ownThread)
struct NotificationReplayTests {
    @Test("every notification in the range is stored once, across pages and environments; a second run adds none")
    func replay() async throws {
        let h = try Harness()
        // Each purchase comes with its notification; one more is a REFUND Apple could not deliver.
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly"),
            FakePurchase(bundleId: "com.example.app", productId: "coins.100"),
            FakePurchase(bundleId: "com.example.other", productId: "pro.monthly"),
            FakePurchase(environment: "Sandbox", bundleId: "com.example.app", productId: "pro.monthly"),
            FakePurchase(bundleId: "com.example.unlisted", productId: "pro.monthly"),
        ])
        try h.fake.purchases.recordNotification(
            type: "REFUND", transactionId: added[0].transactionId, delivered: false
        )
        let apps: Set = ["com.example.app", "com.example.other"]
        let expected = h.fake.purchases.notifications.filter { apps.contains($0.bundleId) }.map(\.signedPayload)
        try #require(expected.count == 5)
        // One of them reached the receiver already.
        _ = try h.scalar("SELECT receive_notification($1, 'receiver')", [expected[0]])

        let environment = try Self.environment(h)
        let since = Self.day(Date(timeIntervalSinceNow: -86_400))
        let first = try ChildProcess(
            ["notifications-replay", "--since", since, "--environment", "both"], environment: environment
        )
        #expect(await first.exit(within: 60) == 0, "\(first.output)")
        // production: com.example.app 3 notifications (2 pages of 2), com.example.other 1; sandbox: 1 and none.
        #expect(first.output.contains("5 pages, 5 notifications read, 4 new, 1 already known, 0 refused"),
            "\(first.output)")
        for payload in expected {
            #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE signed_payload = $1", [payload]) == "1")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE source = 'history'") == "4")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "5", "the unlisted app is not read")

        let second = try ChildProcess(
            ["notifications-replay", "--since", since, "--environment", "both"], environment: environment
        )
        #expect(await second.exit(within: 60) == 0, "\(second.output)")
        #expect(second.output.contains("5 notifications read, 0 new, 5 already known"), "\(second.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "5")

        // Production only (the default), and a range that ends before the notifications were sent.
        let production = try ChildProcess(["notifications-replay", "--since", since], environment: environment)
        #expect(await production.exit(within: 60) == 0, "\(production.output)")
        #expect(production.output.contains("4 notifications read, 0 new, 4 already known"), "\(production.output)")
        let earlier = try ChildProcess(
            ["notifications-replay", "--since", since, "--until", Self.moment(Date(timeIntervalSinceNow: -3_600))],
            environment: environment
        )
        #expect(await earlier.exit(within: 60) == 0, "\(earlier.output)")
        #expect(earlier.output.contains("0 notifications read"), "\(earlier.output)")
    }

    @Test("a date that is not ISO 8601, or --since after --until, is a usage error (exit 64) naming the option")
    func badDates() async throws {
        let environment = ChildProcess.environment(setting: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"])
        let words = try ChildProcess(["notifications-replay", "--since", "yesterday"], environment: environment)
        #expect(await words.exit(within: 30) == 64)
        #expect(words.output.contains("--since"), "\(words.output)")
        let reversed = try ChildProcess(
            ["notifications-replay", "--since", "2026-11-02", "--until", "2026-11-01T12:00:00Z"],
            environment: environment
        )
        #expect(await reversed.exit(within: 30) == 64)
        #expect(reversed.output.contains("must be before --until"), "\(reversed.output)")
    }

    // MARK: Helpers

    /// The settings of a child process talking to the harness's fake with the harness's key.
    static func environment(_ h: Harness) throws -> [String: String] {
        let directory = NSTemporaryDirectory() + "rw-replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        return ChildProcess.environment(setting: [
            "DATABASE_URL": h.databaseURL, "APPSTORE_KEY_ID": Harness.apiKeyID,
            "APPSTORE_ISSUER_ID": Harness.apiIssuerID, "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8",
            "APPSTORE_API_URL": h.fake.apiProductionURL, "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL,
            "APPLE_BUNDLE_IDS": "com.example.app, com.example.other",
        ])
    }

    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }

    static func moment(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
#endif
