@testable import AppStoreModel
import AppleFixtureFiles
import Foundation
import Testing

/// Apple's real verifyReceipt answer (RevenueCat's sandbox receipt, `../shared/fixtures/apple`): the scanner reads
/// what Foundation reads, and the writer gives back every declared member as Apple spelled it.
@Suite("JSONModel on Apple's real answer")
struct AppleResponseTests {
    private static let name = "revenuecat-sandbox-verifyReceipt-response.json"

    @Test("JSONScanner and JSONDecoder read the same answer, all of it", .needsAppleFixtures)
    func scannerMatchesFoundation() throws {
        let bytes = try AppleFixtureFiles.bytes(Self.name)
        let scanned = try VerifyReceiptResponse.scanned(bytes)
        #expect(scanned == (try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(bytes))))
        #expect(scanned.status == 0)
        #expect(scanned.receipt?.bundleId == "com.revenuecat.sampleapp")
        #expect(scanned.receipt?.inApp?.count == 9)
        #expect(scanned.latestReceiptInfo?.count == 9)
        #expect(scanned.pendingRenewalInfo?.count == 1)
        #expect(scanned.receipt?.inApp?.allSatisfy { $0.purchaseDateMs != nil && $0.isTrialPeriod != nil } == true)
    }

    @Test("written back, every declared member is as Apple sent it (numbers as strings inside the receipt)", .needsAppleFixtures)
    func writerKeepsApplesShapes() throws {
        let bytes = try AppleFixtureFiles.bytes(Self.name)
        let apple = try object(bytes)
        let written = try object(try VerifyReceiptResponse.scanned(bytes).jsonBytes())
        expectDeclaredMembers(VerifyReceiptResponse.self, written, equal: apple, except: [
            "receipt", "latest_receipt_info", "pending_renewal_info",
        ])
        let appleReceipt = try #require(apple["receipt"] as? [String: Any])
        let writtenReceipt = try #require(written["receipt"] as? [String: Any])
        expectDeclaredMembers(ReceiptInfo.self, writtenReceipt, equal: appleReceipt, except: ["in_app"])
        for (list, object) in [("in_app", (writtenReceipt, appleReceipt)), ("latest_receipt_info", (written, apple))] {
            let appleEntries = try #require(object.1[list] as? [[String: Any]])
            let writtenEntries = try #require(object.0[list] as? [[String: Any]])
            #expect(writtenEntries.count == appleEntries.count, "\(list)")
            for (writtenEntry, appleEntry) in zip(writtenEntries, appleEntries) {
                expectDeclaredMembers(InAppTransaction.self, writtenEntry, equal: appleEntry)
            }
        }
        let appleRenewals = try #require(apple["pending_renewal_info"] as? [[String: Any]])
        let writtenRenewals = try #require(written["pending_renewal_info"] as? [[String: Any]])
        #expect(writtenRenewals.count == appleRenewals.count)
        for (writtenRenewal, appleRenewal) in zip(writtenRenewals, appleRenewals) {
            expectDeclaredMembers(PendingRenewalInfo.self, writtenRenewal, equal: appleRenewal)
        }
    }

    /// The written object holds exactly the declared members Apple's holds, each equal in value and JSON type.
    private func expectDeclaredMembers<Model: JSONModel>(
        _ model: Model.Type,
        _ written: [String: Any],
        equal apple: [String: Any],
        except nested: Set<String> = []
    ) {
        let declared = Set(Model.fields.all.map(\.key.description))
        #expect(Set(written.keys) == declared.intersection(apple.keys), "\(Model.self): members written")
        for key in declared.subtracting(nested) {
            #expect(
                (written[key] as? NSObject) == (apple[key] as? NSObject),
                "\(Model.self).\(key): written \(written[key] ?? "nothing"), Apple \(apple[key] ?? "nothing")"
            )
            #expect(
                (written[key] is String) == (apple[key] is String), "\(Model.self).\(key): string or not, as Apple"
            )
        }
    }

    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }
}
