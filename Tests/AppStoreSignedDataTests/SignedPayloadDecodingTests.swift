import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing
import X509

/// What the verifier reads from a payload before trusting it, and the signed transaction read after: the fast reader
/// and Foundation's decoder give the same answers, and nothing in a payload can stop the process.
@Suite("Signed payloads: what is read before and after verification")
struct SignedPayloadDecodingTests {
    static let chain = Result { try SigningChain() }

    static func verifier(allowTestEnvironments: Bool = false) throws -> SignedDataVerifier {
        SignedDataVerifier(
            configuration: .init(
                rootCertificates: [try chain.get().root], onlineChecks: false,
                allowTestEnvironments: allowTestEnvironments
            )
        )
    }

    static func sign(_ json: String) throws -> String {
        try JWSSigner(chain: chain.get()).sign(Data(json.utf8))
    }

    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test("signedDate and environment: top level, in data (notifications), and as Xcode writes them")
    func facts() throws {
        let verifier = try Self.verifier(allowTestEnvironments: true)
        let now = Self.nowMs
        let top = try verifier.verify(try Self.sign(#"{"environment":"Sandbox","x":[1,{"y":"z"}],"signedDate":\#(now)}"#))
        #expect(top.signedDateMs == now)
        #expect(top.environment == "Sandbox")

        let nested = try verifier.verify(
            try Self.sign(#"{"notificationType":"TEST","data":{"bundleId":"b","environment":"Production"},"signedDate":\#(now)}"#)
        )
        #expect(nested.environment == "Production")
        #expect(nested.signedDateMs == now)

        // Xcode writes milliseconds with a fraction: the whole milliseconds are the validation time.
        let fractional = try verifier.verify(try Self.sign(#"{"signedDate":\#(now).75,"environment":"Sandbox"}"#))
        #expect(fractional.signedDateMs == now)

        // A member given twice goes to Foundation's decoder, which decides.
        let twice = try verifier.verify(
            try Self.sign(#"{"environment":"Sandbox","signedDate":\#(now),"environment":"Sandbox"}"#)
        )
        #expect(twice.environment == "Sandbox")
    }

    @Test("a signedDate beyond any time, or not a number, is malformed input, never a crash")
    func hostileSignedDate() throws {
        let verifier = try Self.verifier()
        for signedDate in ["1e300", "-1e300", "\"soon\"", "true", "{}"] {
            let error = #expect(throws: SignedDataError.self) {
                try verifier.verify(try Self.sign(#"{"signedDate":\#(signedDate)}"#))
            }
            #expect(error?.code == .malformed, "\(signedDate): \(String(describing: error))")
        }
    }

    @Test("a JWS is split on its bytes: whitespace around it is allowed, a fourth part or a stray byte is not")
    func splitting() throws {
        let verifier = try Self.verifier()
        let jws = try Self.sign(#"{"signedDate":\#(Self.nowMs)}"#)
        #expect(try verifier.verify("\n \t" + jws + "\r\n").signedDateMs != nil)
        for broken in [jws + ".", jws + ".e30", "é" + jws, jws.replacingOccurrences(of: ".", with: "。")] {
            let error = #expect(throws: SignedDataError.self) { try verifier.verify(broken) }
            #expect(error?.code == .malformed || error?.code == .badSignature, "\(String(describing: error))")
        }
        let parts = #expect(throws: SignedDataError.self) { try verifier.verify(jws + ".e30") }
        #expect(parts?.message.contains("this has 4") == true, "\(String(describing: parts))")
    }

    @Test("a signed transaction: ids as numbers, fractional milliseconds, the account token in lower case")
    func transaction() throws {
        let payload = #"""
            {"transactionId":2000000123,"originalTransactionId":"2000000100","webOrderLineItemId":2000000099,
             "bundleId":"com.example","productId":"gold","purchaseDate":1700000000000.9,"expiresDate":"1702592000000",
             "quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"7E3FB20B-4CDB-47CC-936D-99D65F608138",
             "inAppOwnershipType":"PURCHASED","signedDate":1700000001000,"revocationReason":1,
             "revocationDate":1700000002000,"isUpgraded":false,"environment":"Sandbox","price":9990,"unknown":[null]}
            """#
        let transaction = try SignedTransaction(payload: Array(payload.utf8))
        #expect(transaction.transactionId == "2000000123")
        #expect(transaction.webOrderLineItemId == "2000000099")
        #expect(transaction.purchaseDateMs == 1_700_000_000_000)
        #expect(transaction.expiresDateMs == 1_702_592_000_000)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.revocationReason == 1)
        #expect(transaction.revocationDateMs == 1_700_000_002_000)
        #expect(transaction.isUpgraded == false)
        #expect(transaction.price == 9990)

        let error = #expect(throws: SignedDataError.self) {
            try SignedTransaction(payload: Array(#"{"transactionId":"1","expiresDate":1e300}"#.utf8))
        }
        #expect(error?.code == .malformed)
    }
}
