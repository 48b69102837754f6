@testable import FakeAppStore
import Foundation
import PostgresClient
import Testing
@testable import Workers

/// Only what Apple accepts is sent to Send Consumption Information (issue 38): GRANT_PRORATED needs a consumption
/// percentage above 0 and below 100000 for a product that is not an auto-renewable subscription, and a purchase not
/// DELIVERED was consumed 0. The fake App Store refuses what Apple refuses (400), so the old answer ended `failed`.
@Suite("Refund preferences Apple accepts", .serialized, .ownThread)
struct RefundPreferenceTests {
    /// A consumable bought by user-1, credited (verdict delivered), the customer consenting, Apple's
    /// CONSUMPTION_REQUEST pending; the product's policy `policy`.
    static func pending(policy: String?, kind: String = "consumable") throws -> Harness {
        let h = try RefundRequestTests.bought(policy: policy)
        _ = try h.db.query("UPDATE receipt_products SET kind = $1", [kind])
        _ = try h.db.query("SELECT mark_verdict_delivered(id) FROM receipt_jobs")
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try NotificationTests.receive(h, try RefundRequestTests.consumptionRequest())
        try h.drain()
        return h
    }

    static func sentBody(_ h: Harness) throws -> [String: Any] {
        let sent = try #require(h.fake.consumptionAnswers().first)
        return try #require(try JSONSerialization.jsonObject(with: Data(sent.body.utf8)) as? [String: Any])
    }

    @Test("the fake App Store refuses what Apple refuses: GRANT_PRORATED without a percentage, a percentage not delivered")
    func fakeRefuses() {
        let refused = ServerAPIResponder.refusedConsumption
        let base: [String: Any] = [
            "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
        ]
        #expect(refused(base, nil) == nil)
        #expect(refused(base.merging(["refundPreference": "GRANT_PRORATED"]) { $1 }, nil) == .generalBadRequest)
        #expect(refused(base.merging(["refundPreference": "GRANT_PRORATED"]) { $1 }, true) == nil)
        #expect(
            refused(base.merging(["refundPreference": "GRANT_PRORATED", "consumptionPercentage": 100_000]) { $1 }, false)
                == .generalBadRequest
        )
        #expect(
            refused(base.merging(["refundPreference": "GRANT_PRORATED", "consumptionPercentage": 40_000]) { $1 }, false)
                == nil
        )
        #expect(refused(base.merging(["consumptionPercentage": 40_000]) { $1 }, true) == .generalBadRequest)
        #expect(
            refused(base.merging(["deliveryStatus": "UNDELIVERED_OTHER", "consumptionPercentage": 40_000]) { $1 }, nil)
                == .generalBadRequest
        )
        #expect(refused(base.merging(["customerConsented": false]) { $1 }, nil) == .invalidCustomerConsented)
    }

    @Test("policy GRANT_PRORATED with no consumption recorded: sent without the preference, and answered")
    func prorateWithoutConsumption() throws {
        let h = try Self.pending(policy: "grant_prorated")
        let pass = try RefundRequestTests.sender(h, after: 0).runOnce(h.db)
        #expect(pass.answered == 1 && pass.failed == 0, "\(pass)")
        let body = try Self.sentBody(h)
        #expect(body["refundPreference"] == nil, "Apple refuses GRANT_PRORATED without consumptionPercentage")
        #expect(body["consumptionPercentage"] == nil)
        #expect(body["deliveryStatus"] as? String == "DELIVERED")
        #expect(try RefundRequestTests.request(h)["state"] == "answered")
        #expect(
            try h.scalar("SELECT answer ? 'refundPreference' FROM receipt_refund_requests") == "f",
            "answer records what was sent"
        )
    }

    @Test("policy GRANT_PRORATED for an auto-renewable subscription: the preference is sent, never a percentage")
    func prorateSubscription() throws {
        let h = try Self.pending(policy: "grant_prorated", kind: "auto_renewable")
        // Apple (the fake) knows the purchase as a subscription: GRANT_PRORATED without a percentage is accepted.
        try h.fake.purchases.add([
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", transactionId: "3000000000000001",
                type: "Auto-Renewable Subscription", expiresDate: Harness.now + 86_400_000
            )
        ])
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 40000)")
        #expect(try RefundRequestTests.sender(h, after: 0).runOnce(h.db).answered == 1)
        let body = try Self.sentBody(h)
        #expect(body["refundPreference"] as? String == "GRANT_PRORATED")
        #expect(body["consumptionPercentage"] == nil)
    }

    @Test("a purchase not delivered: the recorded consumption is sent as 0, and GRANT_PRORATED is left out")
    func undelivered() throws {
        let h = try RefundRequestTests.bought(policy: "grant_prorated")
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 40000)")
        _ = try NotificationTests.receive(h, try RefundRequestTests.consumptionRequest())
        try h.drain()
        // The verdict was never delivered to the API layer: UNDELIVERED_OTHER.
        #expect(try RefundRequestTests.sender(h, after: 0).runOnce(h.db).answered == 1)
        let body = try Self.sentBody(h)
        #expect(body["deliveryStatus"] as? String == "UNDELIVERED_OTHER")
        #expect(body["consumptionPercentage"] as? Int == 0)
        #expect(body["refundPreference"] == nil)
    }

    @Test("answer_refund_request refuses a GRANT_PRORATED Apple would refuse, with what to give instead")
    func answerRefused() throws {
        let h = try Self.pending(policy: nil)
        for (delivery, percentage) in [("DELIVERED", nil), ("DELIVERED", "0"), ("DELIVERED", "100000"),
                                        ("UNDELIVERED_OTHER", "0")] as [(String, String?)] {
            let error = #expect(throws: PostgresError.self) {
                try h.db.query(
                    "SELECT answer_refund_request('3000000000000001', $1, 'GRANT_PRORATED', $2::integer)",
                    [delivery, percentage]
                )
            }
            #expect(error?.sqlState == "22023", "\(delivery) \(percentage ?? "NULL")")
            #expect("\(error.map { "\($0)" } ?? "")".contains("GRANT_FULL or DECLINE"), "\(String(describing: error))")
        }
        let undelivered = #expect(throws: PostgresError.self) {
            try h.db.query("SELECT answer_refund_request('3000000000000001', 'UNDELIVERED_OTHER', 'DECLINE', 5000)")
        }
        #expect(undelivered?.sqlState == "22023")
        #expect(try h.scalar("SELECT count(*) FROM receipt_refund_requests WHERE app_answer IS NOT NULL") == "0")

        // A percentage recorded first makes the same answer acceptable, and it is sent with it.
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 40000)")
        _ = try h.db.query("SELECT answer_refund_request('3000000000000001', 'DELIVERED', 'GRANT_PRORATED')")
        #expect(try RefundRequestTests.sender(h).runOnce(h.db).answered == 1)
        let body = try Self.sentBody(h)
        #expect(body["refundPreference"] as? String == "GRANT_PRORATED")
        #expect(body["consumptionPercentage"] as? Int == 40000)
    }
}
