import AppStoreSignedData
import Foundation
import Testing

/// Monthly plans with a 12-month commitment (issue 23): the transaction's billingPlanType, the renewal info's
/// renewalBillingPlanType and commitmentInfo, decoded when present, numbers checked.
@Suite("Signed data: billing plans and commitments")
struct BillingPlanDecodingTests {
    static func renewal(_ commitment: [String: Any]) throws -> SignedRenewalInfo {
        let object: [String: Any] = [
            "originalTransactionId": "2000000000000000", "productId": "pro.monthly", "autoRenewStatus": 1,
            "renewalBillingPlanType": "MONTHLY_WITH_12_MONTH_COMMITMENT", "commitmentInfo": commitment,
            "environment": "Production", "signedDate": 1_767_225_600_000,
        ]
        return try JSONDecoder().decode(SignedRenewalInfo.self, from: JSONSerialization.data(withJSONObject: object))
    }

    @Test("the plan and the commitment are read")
    func decoded() throws {
        let info = try Self.renewal([
            "commitmentAutoRenewProductId": "pro.monthly", "commitmentAutoRenewStatus": 1,
            "commitmentRenewalBillingPlanType": "MONTHLY_WITH_12_MONTH_COMMITMENT",
            "commitmentRenewalDate": 1_798_761_600_000, "commitmentRenewalPrice": 119_880,
        ])
        #expect(info.renewalBillingPlanType == "MONTHLY_WITH_12_MONTH_COMMITMENT")
        #expect(info.commitmentInfo?.autoRenewProductId == "pro.monthly")
        #expect(info.commitmentInfo?.autoRenewStatus == 1)
        #expect(info.commitmentInfo?.renewalBillingPlanType == "MONTHLY_WITH_12_MONTH_COMMITMENT")
        #expect(info.commitmentInfo?.renewalDateMs == 1_798_761_600_000)
        #expect(info.commitmentInfo?.renewalPrice == 119_880)

        let transaction = try SignedTransaction(
            payload: Array(#"{"transactionId":"1","billingPlanType":"MONTHLY_WITH_12_MONTH_COMMITMENT"}"#.utf8)
        )
        #expect(transaction.billingPlanType == "MONTHLY_WITH_12_MONTH_COMMITMENT")
    }

    @Test("a commitment's numbers that are no date, price or status are refused, not trapped on")
    func hostileNumbers() throws {
        for (key, value) in [
            ("commitmentRenewalPrice", 1e300), ("commitmentRenewalDate", -1e300), ("commitmentAutoRenewStatus", 1.5),
            ("commitmentAutoRenewStatus", 1e300),
        ] {
            #expect(throws: SignedDataError.self, "\(key) \(value)") { try Self.renewal([key: value]) }
        }
    }

    @Test("the transaction's commitmentInfo (period n of m, its end, the price after it) is read, numbers checked")
    func transactionCommitment() throws {
        func transaction(_ commitment: String) throws -> SignedTransaction {
            try SignedTransaction(
                payload: Array(#"{"transactionId":"1","billingPlanType":"MONTHLY","commitmentInfo":\#(commitment)}"#.utf8)
            )
        }
        let read = try transaction(
            #"{"billingPeriodNumber":3,"totalBillingPeriods":12,"commitmentExpiresDate":1798761600000,"commitmentPrice":9990}"#
        )
        #expect(read.commitmentInfo?.billingPeriodNumber == 3)
        #expect(read.commitmentInfo?.totalBillingPeriods == 12)
        #expect(read.commitmentInfo?.commitmentExpiresDateMs == 1_798_761_600_000)
        #expect(read.commitmentInfo?.commitmentPrice == 9_990)
        for hostile in [
            #"{"billingPeriodNumber":1e300}"#, #"{"totalBillingPeriods":1.5}"#, #"{"commitmentExpiresDate":-1e300}"#,
            #"{"commitmentPrice":1e300}"#, #""twelve""#,
        ] {
            #expect(throws: SignedDataError.self, "\(hostile)") { try transaction(hostile) }
        }
    }
}
