@testable import AppStoreModel
import Foundation
import Testing

/// The lenient rules, on both decoding paths: for every spelling, `JSONScanner` gives `JSONDecoder`'s answer or hands
/// the document over (it may be strict, never different); the spellings Apple uses never need the hand-over.
@Suite("JSONModel: lenient values, JSONScanner against JSONDecoder")
struct LenientRulesTests {
    /// Apple's own spellings, and ids sent as numbers: the scanner reads these itself.
    static let appleSpellings = [
        #""1594755400000""#, "1594755400000", #""1""#, "1", #""0""#, "0", #""-12""#, #""007""#,
        #""999999999999999999""#, #""9223372036854775807""#, #""true""#, #""false""#, "true", "false", "null", #""""#,
    ]

    /// Everything else: out of range, signs, spaces, other cases, fractions, escapes, text.
    static let otherSpellings = [
        #""9223372036854775808""#, #""-9223372036854775808""#, "-9223372036854775808", #""+5""#, #""-""#,
        #"" 42 ""#, #""4 2""#, #""TRUE""#, #"" false""#, #""yes""#, "1.5", #""1.5""#, "1e3", #""\u0031""#,
        #""12\"""#, #""pro\n""#, #""é""#, "[]", "{}",
    ]

    static let keys = ["quantity", "transaction_id", "purchase_date_ms", "is_trial_period"]

    @Test("Apple's spellings: read by the scanner, as JSONDecoder reads them", arguments: keys, appleSpellings)
    func common(key: String, value: String) throws {
        let document = Array(#"{"\#(key)": \#(value)}"#.utf8)
        let reference = try? JSONDecoder().decode(InAppTransaction.self, from: Data(document))
        let scanned = try? InAppTransaction.scanned(document)
        #expect(scanned == reference)
        // Some pairs fail on both paths: a boolean field refuses 1594755400000.
        if reference != nil { #expect(scanned != nil, "the scanner handed \(value) over") }
    }

    @Test(
        "other spellings: the scanner agrees with JSONDecoder or hands the document over",
        arguments: keys, otherSpellings
    )
    func unusual(key: String, value: String) throws {
        let document = Array(#"{"\#(key)": \#(value)}"#.utf8)
        let reference = try? JSONDecoder().decode(InAppTransaction.self, from: Data(document))
        if let scanned = try? InAppTransaction.scanned(document) {
            #expect(scanned == reference)
        }
        #expect((try? InAppTransaction.decode(document)) == reference)
    }

    @Test("is_retryable wins over is-retryable, which is read when is_retryable is absent or null", arguments: [
        (#"{"status": 21100, "is-retryable": true}"#, true),
        (#"{"status": 21100, "is_retryable": false, "is-retryable": true}"#, false),
        (#"{"status": 21100, "is-retryable": true, "is_retryable": false}"#, false),
        (#"{"status": 21100, "is_retryable": null, "is-retryable": "1"}"#, true),
        (#"{"status": 21100, "is-retryable": null}"#, nil),
    ] as [(String, Bool?)])
    func retryable(json: String, expected: Bool?) throws {
        let document = Array(json.utf8)
        #expect(try VerifyReceiptResponse.decode(document).isRetryable == expected)
        #expect(try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(document)).isRetryable == expected)
    }

    @Test("an answer without a status, or with a null one, fails with Foundation's error", arguments: [
        "{}", #"{"status": null}"#, #"{"status": ""}"#, #"{"environment": "Sandbox"}"#,
    ])
    func missingStatus(json: String) throws {
        #expect(throws: JSONScanner.Unsupported.self) { try VerifyReceiptResponse.scanned(Array(json.utf8)) }
        let error = try #require(throws: DecodingError.self) { try VerifyReceiptResponse.decode(Array(json.utf8)) }
        guard case .keyNotFound(let key, let context) = error else {
            Issue.record("expected keyNotFound, got \(error)")
            return
        }
        #expect(key.stringValue == "status")
        #expect(context.debugDescription == "no status in the answer")
    }

    @Test("the request: receipt-data and exclude-old-transactions keep their defaults when absent or null")
    func requestDefaults() throws {
        let document = Array(#"{"receipt-data": null, "password": 7, "unknown": [1, {"a": null}]}"#.utf8)
        let expected = VerifyReceiptRequest(receiptData: "", password: "7", excludeOldTransactions: false)
        #expect(try VerifyReceiptRequest.scanned(document) == expected)
        #expect(try JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(document)) == expected)
        #expect(String(decoding: expected.jsonBytes(), as: UTF8.self)
            == #"{"receipt-data":"","password":"7","exclude-old-transactions":false}"#)
    }
}
