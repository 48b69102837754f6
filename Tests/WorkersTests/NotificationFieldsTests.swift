import AppStoreSignedData
import Foundation
import ReceiptQueue
import Testing

@testable import Workers

/// Issue 38: what the renewal info and the transaction carry beyond the fields the rules use reaches the JSON the
/// database applies, not dropped between the decoder and SQL.
@Suite("Notification outcome: renewal appAccountToken and win-back offers, transaction storefrontId")
struct NotificationFieldsTests {
    static func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test("the three fields are written under their snake_case names")
    func written() throws {
        let renewalPayload: [String: Any] = [
            "originalTransactionId": "2000000000000000", "environment": "Production",
            "appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138", "eligibleWinBackOfferIds": ["wb.1"],
        ]
        let renewal = try JSONDecoder().decode(
            SignedRenewalInfo.self, from: JSONSerialization.data(withJSONObject: renewalPayload)
        )
        let renewalJSON = try Self.json(NotificationResult.renewal(renewal))
        #expect(renewalJSON["app_account_token"] as? String == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(renewalJSON["eligible_win_back_offer_ids"] as? [String] == ["wb.1"])

        let transaction = try SignedTransaction(
            payload: Array(#"{"transactionId":"1","storefront":"JPN","storefrontId":"143462"}"#.utf8)
        )
        let transactionJSON = try Self.json(NotificationResult.transaction(transaction))
        #expect(transactionJSON["storefront"] as? String == "JPN")
        #expect(transactionJSON["storefront_id"] as? String == "143462")
    }
}
