#if os(Linux)
import FakeAppStore
import Foundation
import Testing

/// Attack 5 (issue 36): docs/configuration.md says that with `RECEIPT_SOURCE=api` no shared secret is needed, and
/// `work` refused to start without one. verifyReceipt is the shared secret's only user, so `work` asks for it only when
/// receipts go to verifyReceipt (`Settings.needsSharedSecret`).
@Suite("RECEIPT_SOURCE=api needs no shared secret", .serialized, .ownThread)
struct ReceiptSourceSecretTests {
    /// The settings of a `work --drain` against `h`'s fake App Store Server API, with no shared secret at all, for
    /// `body`; the key and root certificate files in a directory of their own, removed afterwards.
    static func withSettings(_ h: Harness, _ body: ([String: String]) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "rw-source-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await body(try settings(h, directory: directory))
    }

    static func settings(_ h: Harness, directory: String) throws -> [String: String] {
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        _ = try h.fake.writeRootCertificate(to: directory + "/root.der")
        return ChildProcess.environment(
            removing: ["APPLE_SHARED_SECRET", "APPLE_SHARED_SECRET_FILE", "RECEIPT_SOURCE"],
            setting: [
                "DATABASE_URL": h.databaseURL, "APPLE_BUNDLE_IDS": "com.example.app",
                "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
                "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
                "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der",
                "APPSTORE_ONLINE_CHECKS": "off", "POLL_INTERVAL_SECONDS": "0.05",
            ]
        )
    }

    @Test("work with RECEIPT_SOURCE=api (or auto with the key) and no shared secret starts, and verifies a job")
    func apiStartsWithoutSecret() async throws {
        let h = try Harness()
        try await Self.withSettings(h) { environment in
            for source in ["api", "auto"] {
                let added = try h.fake.purchases.add([
                    FakePurchase(bundleId: "com.example.app", productId: "pro.monthly")
                ])
                let job = try ServerAPITests.enqueueTransaction(h, added[0].transactionId, order: "secretless-\(source)")
                let work = try ChildProcess(
                    ["work", "--drain"], environment: environment.merging(["RECEIPT_SOURCE": source]) { $1 }
                )
                #expect(await work.exit(within: 60) == 0, "\(source): \(work.output)")
                #expect(!work.output.contains("shared secret"), "\(source): \(work.output)")
                #expect(try h.job(job)["state"] == "verified", "\(source): \(work.output)")
            }
        }
    }

    @Test("work with receipts going to verifyReceipt and no shared secret: exit 2 naming APPLE_SHARED_SECRET")
    func verifyReceiptNeedsSecret() async throws {
        let h = try Harness()
        try await Self.withSettings(h) { withKey in
            var withoutKey = withKey
            for name in ["APPSTORE_KEY_ID", "APPSTORE_ISSUER_ID", "APPSTORE_PRIVATE_KEY_FILE"] { withoutKey[name] = nil }
            let cases: [(String, [String: String])] = [
                ("verifyreceipt with the key", withKey.merging(["RECEIPT_SOURCE": "verifyreceipt"]) { $1 }),
                ("auto without the key", withoutKey),
            ]
            for (name, environment) in cases {
                let work = try ChildProcess(["work", "--drain"], environment: environment)
                #expect(await work.exit(within: 60) == 2, "\(name): \(work.output)")
                #expect(work.output.contains("APPLE_SHARED_SECRET"), "\(name): \(work.output)")
            }
        }
    }
}
#endif
