#if os(Linux)
import AppStoreClient
import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptRules
import Testing

/// App transactions: `enqueue_app_transaction()` verified by the workers (signature and chain first, then app and
/// environment) and recorded once per appTransactionId; Apple's Get App Transaction Info through the client, the fake
/// App Store (which signs app transactions at test time) and the built binary.
@Suite("app transactions: verified by the workers, recorded once; Get App Transaction Info", .serialized, .ownThread)
struct AppTransactionTests {
    static func enqueue(_ h: Harness, _ jws: String, order: String, user: String = "user-1") throws -> Int64 {
        let id = try h.scalar(
            "SELECT enqueue_app_transaction(signed_app_transaction => $1, order_id => $2, user_id => $3, "
                + "bundle_id => 'com.example.app')",
            [jws, order, user]
        )
        return try #require(id.flatMap(Int64.init))
    }

    static func verdict(_ h: Harness, _ job: Int64) throws -> String {
        let row = try h.job(job)
        return "\(row["state"] ?? "?")\(row["reason"].map { $0.isEmpty ? "" : ":\($0)" } ?? "")"
    }

    @Test("a valid one: verified, recorded once; again for another order already_credited, another user owned_by_other_user")
    func recordedOnce() throws {
        let h = try Harness()
        let app = try h.fake.purchases.appTransaction(
            customerId: "customer-1", bundleId: "com.example.app", originalApplicationVersion: "1.2",
            originalPurchaseDate: Date(timeIntervalSince1970: 1_500_000_000)
        )
        let first = try Self.enqueue(h, app.signed, order: "o-1")
        #expect(try Self.enqueue(h, app.signed, order: "o-1") == first, "the same order: the same job")
        try h.drain()
        #expect(try Self.verdict(h, first) == "verified")
        #expect(try h.job(first)["environment"] == "Production")
        #expect(
            try h.scalar(
                """
                SELECT app_transaction_id || ' ' || user_id || ' ' || order_id || ' ' || original_application_version
                       || ' ' || original_platform || ' ' || extract(epoch FROM original_purchase_date)::bigint
                       || ' ' || job_id
                FROM receipt_app_transactions
                """
            ) == "\(app.appTransactionId) user-1 o-1 1.2 iOS 1500000000 \(first)"
        )
        #expect(try h.scalar("SELECT result->'app_transaction'->>'original_application_version' FROM receipt_jobs "
            + "WHERE id = $1", [String(first)]) == "1.2")
        #expect(try h.scalar("SELECT result->>'credit_key' FROM receipt_jobs WHERE id = $1", [String(first)])
            == "app:\(app.appTransactionId)")

        // Signed again later (a new launch of the app): the same appTransactionId.
        let again = try h.fake.purchases.appTransaction(customerId: "customer-1", bundleId: "com.example.app")
        #expect(again.appTransactionId == app.appTransactionId && again.signed != app.signed)
        let second = try Self.enqueue(h, again.signed, order: "o-2")
        let third = try Self.enqueue(h, app.signed, order: "o-3", user: "user-2")
        try h.drain()
        #expect(try Self.verdict(h, second) == "rejected:already_credited")
        #expect(try Self.verdict(h, third) == "rejected:owned_by_other_user")
        #expect(try h.scalar("SELECT count(*) FROM receipt_app_transactions") == "1")
        #expect(try h.job(second)["last_error"]?.contains("order o-1") == true)
    }

    @Test("wrong app, wrong environment, forged signature, malformed: each rejected with its reason, nothing recorded")
    func rejections() throws {
        let h = try Harness()
        let otherApp = try h.fake.purchases.appTransaction(customerId: "c-1", bundleId: "com.someone.else")
        let sandbox = try h.fake.purchases.appTransaction(
            customerId: "c-2", bundleId: "com.example.app", environment: "Sandbox"
        )
        let xcode = try h.fake.purchases.appTransaction(customerId: "c-3", bundleId: "com.example.app", environment: "Xcode")
        let forged = try h.fake.purchases.appTransaction(
            customerId: "c-4", bundleId: "com.example.app", signedBy: try SigningChain()
        )
        let jobs = [
            ("bundle", try Self.enqueue(h, otherApp.signed, order: "o-bundle"), "rejected:bundle_mismatch"),
            ("sandbox", try Self.enqueue(h, sandbox.signed, order: "o-sandbox"), "rejected:sandbox_not_allowed"),
            ("xcode", try Self.enqueue(h, xcode.signed, order: "o-xcode"), "rejected:invalid_signature"),
            ("forged", try Self.enqueue(h, forged.signed, order: "o-forged"), "rejected:invalid_signature"),
            ("malformed", try Self.enqueue(h, "abc.def", order: "o-malformed"), "rejected:malformed_input"),
        ]
        try h.drain { $0.rules.sandboxPolicy = .reject }
        for (name, job, expected) in jobs {
            let row = try h.job(job)
            #expect(try Self.verdict(h, job) == expected, "\(name): \(row)")
        }
        let forgery = try h.job(jobs[3].1)
        #expect(forgery["last_error"]?.contains("chain") == true, "\(forgery)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_app_transactions") == "0")

        // The sandbox's own, with the policy that accepts it: credited under Sandbox.
        let accepted = try Self.enqueue(h, sandbox.signed, order: "o-sandbox-2")
        try h.drain()
        #expect(try Self.verdict(h, accepted) == "verified")
        #expect(try h.scalar("SELECT environment FROM receipt_app_transactions") == "Sandbox")
    }

    @Test("production: the appAppleId must be the app's registered one (APPSTORE_APP_APPLE_IDS), when one is")
    func appAppleId() throws {
        let h = try Harness()
        let app = try h.fake.purchases.appTransaction(customerId: "customer-1", bundleId: "com.example.app")
        let payload = try #require(
            try JSONSerialization.jsonObject(with: Data(SetAccountTokenTests.payload(app.signed).utf8)) as? [String: Any]
        )
        let signedId = try #require(payload["appAppleId"] as? Int64)
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = 'com.example.app'",
                           [String(signedId + 1)])
        let other = try Self.enqueue(h, app.signed, order: "o-1")
        try h.drain()
        #expect(try Self.verdict(h, other) == "rejected:bundle_mismatch")
        #expect(try h.job(other)["last_error"]?.contains("Apple ID \(signedId)") == true)
        #expect(try h.scalar("SELECT count(*) FROM receipt_app_transactions") == "0")

        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = 'com.example.app'",
                           [String(signedId)])
        let same = try Self.enqueue(h, app.signed, order: "o-2")
        try h.drain()
        #expect(try Self.verdict(h, same) == "verified")
        #expect(try h.scalar("SELECT app_apple_id FROM receipt_app_transactions") == String(signedId))
    }

    @Test("a payload that names another environment beside receiptType is refused before anything is read")
    func twoEnvironments() throws {
        let h = try Harness()
        let signer = try JWSSigner(chain: h.fake.signingChain)
        let payload = #"{"receiptType":"Production","environment":"Xcode","bundleId":"com.example.app","#
            + #""appTransactionId":"704289572311573098","receiptCreationDate":1700000000000}"#
        let job = try Self.enqueue(h, try signer.sign(Array(payload.utf8)), order: "o-two")
        try h.drain()
        #expect(try Self.verdict(h, job) == "rejected:invalid_signature")
        let row = try h.job(job)
        #expect(row["last_error"]?.contains("two environments") == true, "\(row)")
    }

    @Test("Get App Transaction Info: by a customer's transaction id or the appTransactionId; 4040019, 4040010; the command")
    func info() async throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", customerId: "customer-1"),
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", customerId: "customer-2"),
        ])
        let app = try h.fake.purchases.appTransaction(
            customerId: "customer-1", bundleId: "com.example.app", originalApplicationVersion: "3.1"
        )
        for id in [added[0].transactionId, app.appTransactionId] {
            let (result, _) = h.serverAPI.appTransactionInfo(transactionId: id, bundleId: "com.example.app")
            let signed = try #require(result.value, "\(id): \(result)")
            let verified = try h.signedData.verifyAppTransaction(signed)
            #expect(verified.appTransactionId == app.appTransactionId && verified.originalApplicationVersion == "3.1")
        }
        let (none, _) = h.serverAPI.appTransactionInfo(
            transactionId: added[1].transactionId, bundleId: "com.example.app", environment: .production
        )
        guard case .notFound(let failure) = none else {
            Issue.record("a customer without an app transaction: expected notFound, got \(none)")
            return
        }
        #expect(failure.appleStatus == 4040019)
        let (unknown, calls) = h.serverAPI.appTransactionInfo(transactionId: "9999999999999999", bundleId: "com.example.app")
        #expect(unknown.failure?.appleStatus == 4040010 && calls.count == 2, "\(unknown)")

        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let environment = try SetAccountTokenTests.environment(h, directory: directory).merging([
            "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der", "APPSTORE_ONLINE_CHECKS": "off",
        ]) { $1 }
        let found = try ChildProcess(
            ["app-transaction", "--transaction-id", added[0].transactionId, "--json"], environment: environment,
            separateErrors: true
        )
        #expect(await found.exit(within: 60) == 0, "\(found.output) \(found.errors)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(found.output.utf8)) as? [String: Any])
        #expect(document["app_transaction_id"] as? String == app.appTransactionId, "\(document)")
        #expect(document["original_application_version"] as? String == "3.1", "\(document)")
        let missing = try ChildProcess(
            ["app-transaction", "--transaction-id", added[1].transactionId], environment: environment,
            separateErrors: true
        )
        #expect(await missing.exit(within: 60) == 3, "\(missing.output) \(missing.errors)")
        // Without the fake's root trusted, what Apple sent does not verify: exit 1.
        let untrusted = try ChildProcess(
            ["app-transaction", "--transaction-id", added[0].transactionId],
            environment: environment.merging(["APPSTORE_ROOT_CERTIFICATES": ""]) { $1 }, separateErrors: true
        )
        #expect(await untrusted.exit(within: 60) == 1, "\(untrusted.output) \(untrusted.errors)")
        #expect(untrusted.errors.contains("did not verify"), "\(untrusted.errors)")
    }
}
#endif
