import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// Attack 5: numbers no field can hold (1e300, -1e300, beyond Int64, a fraction where a whole number belongs, an
/// overflow to infinity) in every numeric field of notifications, renewal info and transactions, validly signed.
/// Each is `malformed` or read as a number that fits; none stops the process (a trap would end this test run).
@Suite("Signed data: hostile numbers")
struct HostileNumberTests {
    static let signer = Result { try JWSSigner(chain: SigningChain()) }
    static let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
    static let hostile = [
        "1e300", "-1e300", "1.5", "-1.5", "1e19", "-1e19", "9223372036854775808", "-9223372036854775809",
        "99999999999999999999999999", "1e309", "-0.0", "\"NaN\"", "\"1e300\"", "\"Infinity\"",
        "-9223372036854775808", "9223372036854775807", "253402300800000", "-1",
    ]
    /// Values no whole number or time in milliseconds can be.
    static let outOfRange = ["1e300", "-1e300", "1e19", "-1e19", "9223372036854775808", "99999999999999999999999999", "1e309"]

    static func verifier() throws -> SignedDataVerifier {
        SignedDataVerifier(configuration: .init(rootCertificates: [try signer.get().chain.root], onlineChecks: false))
    }

    static func sign(_ json: String) throws -> String { try signer.get().sign(Data(json.utf8)) }

    static func renewal(_ field: String, _ value: String) -> String {
        var fields = [
            "originalTransactionId": "\"2000000000000000\"", "autoRenewStatus": "1", "expirationIntent": "1",
            "gracePeriodExpiresDate": "\(nowMs)", "renewalDate": "\(nowMs)", "recentSubscriptionStartDate": "\(nowMs)",
            "environment": "\"Production\"", "signedDate": "\(nowMs)",
        ]
        fields[field] = value
        return "{" + fields.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static func transaction(_ field: String?, _ value: String) -> String {
        var fields = [
            "transactionId": "\"2000000000000001\"", "originalTransactionId": "\"2000000000000000\"",
            "webOrderLineItemId": "\"9000\"", "bundleId": "\"com.example.app\"", "productId": "\"pro.monthly\"",
            "purchaseDate": "\(nowMs - 1000)", "originalPurchaseDate": "\(nowMs - 1000)",
            "expiresDate": "\(nowMs + 86_400_000)", "quantity": "1", "signedDate": "\(nowMs)",
            "revocationDate": "\(nowMs)", "revocationReason": "1", "price": "9990", "environment": "\"Production\"",
        ]
        if let field { fields[field] = value }
        return "{" + fields.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static func notification(
        signedDate: String = "\(nowMs)", appAppleId: String = "1234567890", status: String = "1",
        transaction: String? = nil, renewal: String? = nil
    ) throws -> String {
        var data = [
            "\"bundleId\":\"com.example.app\"", "\"environment\":\"Production\"", "\"appAppleId\":\(appAppleId)",
            "\"status\":\(status)",
        ]
        if let transaction { data.append("\"signedTransactionInfo\":\"\(try sign(transaction))\"") }
        if let renewal { data.append("\"signedRenewalInfo\":\"\(try sign(renewal))\"") }
        return try sign(
            #"{"notificationType":"DID_CHANGE_RENEWAL_STATUS","notificationUUID":"\#(UUID().uuidString)","#
                + #""signedDate":\#(signedDate),"data":{\#(data.joined(separator: ","))}}"#
        )
    }

    /// Verifies `jws`: a value or a `malformed` error, nothing else (`untrustedChain` for a signedDate that is a time
    /// outside the chain's validity, 1.5 ms after 1970 say).
    static func outcome(_ jws: String) throws -> SignedNotification? {
        do {
            return try verifier().verifyNotification(jws)
        } catch let error as SignedDataError {
            #expect(error.code == .malformed || error.code == .untrustedChain, "\(error)")
            return nil
        }
    }

    @Test("the notification's signedDate, appAppleId and status", arguments: hostile)
    func notification(value: String) throws {
        let date = try Self.outcome(try Self.notification(signedDate: value))
        let id = try Self.outcome(try Self.notification(appAppleId: value))
        let status = try Self.outcome(try Self.notification(status: value))
        if Self.outOfRange.contains(value) {
            #expect(date == nil && id == nil && status == nil, "\(value) was read as a number")
        }
        if value == "1.5" { #expect(id == nil, "appAppleId 1.5 is no id") }
        #expect(try Self.outcome(try Self.notification())?.appAppleId == 1_234_567_890)
    }

    @Test(
        "every numeric field of a renewal info",
        arguments: ["originalTransactionId", "autoRenewStatus", "expirationIntent", "gracePeriodExpiresDate", "renewalDate",
                    "recentSubscriptionStartDate", "signedDate"]
    )
    func renewalInfo(field: String) throws {
        for value in Self.hostile {
            let verified = try Self.outcome(try Self.notification(renewal: Self.renewal(field, value)))
            if Self.outOfRange.contains(value) {
                #expect(verified == nil, "\(field): \(value) was read as a number")
            }
        }
        let plain = try #require(try Self.outcome(try Self.notification(renewal: Self.renewal("x", "0"))))
        #expect(plain.renewalInfo?.gracePeriodExpiresDateMs == Self.nowMs)
    }

    @Test(
        "every numeric field of a transaction (inside a notification, and alone)",
        arguments: ["transactionId", "originalTransactionId", "webOrderLineItemId", "purchaseDate", "originalPurchaseDate",
                    "expiresDate", "quantity", "signedDate", "revocationDate", "revocationReason", "price"]
    )
    func transaction(field: String) throws {
        let dates = ["purchaseDate", "originalPurchaseDate", "expiresDate", "signedDate", "revocationDate"]
        for value in Self.hostile {
            let verified = try Self.outcome(try Self.notification(transaction: Self.transaction(field, value)))
            let alone = Result { try SignedTransaction(payload: Array(Self.transaction(field, value).utf8)) }
            if case .failure(let error) = alone {
                #expect((error as? SignedDataError)?.code == .malformed, "\(field): \(value): \(error)")
            }
            if dates.contains(field), Self.outOfRange.contains(value) {
                #expect(verified == nil, "\(field): \(value) was read as a time")
                #expect((try? alone.get()) == nil, "\(field): \(value) was read as a time")
            }
        }
        let plain = try #require(try Self.outcome(try Self.notification(transaction: Self.transaction(nil, ""))))
        #expect(plain.transaction?.expiresDateMs == Self.nowMs + 86_400_000)
    }
}
