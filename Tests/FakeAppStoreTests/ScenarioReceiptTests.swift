import AppStoreModel
import AppleFixtureFiles
import Foundation
import Testing

@testable import FakeAppStore

@Suite("Scenario receipts")
struct ScenarioReceiptTests {
    static let monthly = InAppTransaction(
        productId: "monthly",
        transactionId: "1001",
        originalTransactionId: "1000",
        purchaseDateMs: 1_700_000_000_000,
        expiresDateMs: 1_702_592_000_000
    )

    @Test("base64() and decode(base64:) round-trip every field")
    func roundTrip() throws {
        let scenario = ScenarioReceipt(
            environment: "Sandbox",
            bundleId: "com.example.app",
            inApp: [Self.monthly],
            latestReceiptInfo: [Self.monthly],
            status: 21006,
            faults: ScenarioReceipt.Fault.allCases,
            nonce: "job-1"
        )
        #expect(ScenarioReceipt.decode(base64: scenario.base64()) == scenario)
        #expect(scenario.base64() == scenario.base64(), "the encoding is deterministic")
    }

    @Test("the JSON inside is Apple-shaped: magic key, snake_case, string values, fault names")
    func jsonShape() throws {
        let scenario = ScenarioReceipt(
            environment: "Production", bundleId: "b", inApp: [Self.monthly], faults: [.status21005, .html503]
        )
        let json = String(decoding: try #require(Data(base64Encoded: scenario.base64())), as: UTF8.self)
        #expect(json.contains(#""fake_appstore_scenario":1"#))
        #expect(json.contains(#""purchase_date_ms":"1700000000000""#))
        #expect(json.contains(#""faults":["21005","html503"]"#))
        #expect(!json.contains("latest_receipt_info"))
    }

    @Test("hand-written scenario JSON with numbers, line-wrapped base64 and every fault name decodes")
    func handWritten() throws {
        let json = """
            {"fake_appstore_scenario": 1, "environment": "Sandbox", "bundle_id": "x",
             "in_app": [{"product_id": "p", "transaction_id": 7, "purchase_date_ms": 1700000000000}],
             "faults": ["21005", "21009", "21199", "http503", "html503", "truncated", "reset", "hang",
                        "21004", "21002", "21100", "refused"]}
            """
        let base64 = Data(json.utf8).base64EncodedString(options: .lineLength64Characters)
        let scenario = try #require(ScenarioReceipt.decode(base64: base64))
        #expect(scenario.isSandbox)
        #expect(scenario.inApp.first?.transactionId == "7")
        #expect(scenario.faults.count == 12)
        #expect(Set(scenario.faults) == Set(ScenarioReceipt.Fault.allCases))
    }

    @Test("JSON without the magic key, garbage and real receipts are not scenarios", .needsAppleFixtures)
    func notScenarios() throws {
        #expect(ScenarioReceipt.decode(base64: Data(#"{"environment":"Sandbox"}"#.utf8).base64EncodedString()) == nil)
        #expect(
            ScenarioReceipt.decode(
                base64: Data(#"{"fake_appstore_scenario":2,"environment":"Sandbox"}"#.utf8)
                    .base64EncodedString()) == nil)
        #expect(ScenarioReceipt.decode(base64: "%%% not base64 %%%") == nil)
        #expect(ScenarioReceipt.decode(base64: try Fixtures.text("revenuecat-sandbox-receipt.b64")) == nil)
    }

    @Test("fault statuses: only the status faults carry one")
    func faultStatuses() {
        #expect(ScenarioReceipt.Fault.status21199.status == 21199)
        #expect(
            ScenarioReceipt.Fault.allCases.filter { $0.status != nil }.map(\.rawValue)
                .allSatisfy { Int($0) != nil })
        #expect(ScenarioReceipt.Fault.hang.status == nil)
    }

    @Test("random fault draws follow the rates")
    func faultRates() {
        var generator = SystemRandomNumberGenerator()
        #expect(FaultRates.none.draw(using: &generator) == nil)
        #expect(FaultRates(status21005: 1).draw(using: &generator) == .status21005)
        #expect(FaultRates(wrongSecret21004: 1).draw(using: &generator) == .status21004)
        let rates = FaultRates(html503: 0.25, connectionReset: 0.25)
        var counts = [ScenarioReceipt.Fault?: Int]()
        for _ in 0..<4_000 { counts[rates.draw(using: &generator), default: 0] += 1 }
        #expect((800...1_200).contains(counts[.html503] ?? 0))
        #expect((800...1_200).contains(counts[.reset] ?? 0))
        #expect((1_700...2_300).contains(counts[nil] ?? 0))
        #expect(counts.keys.count == 3)
    }
}
