import AppStoreClient
import Foundation
import ReceiptRules
import Testing

/// A minimal accepted answer with one purchase; `status` and `inApp` are spliced in as raw JSON.
private func answer(status: String = "0", bundleId: String = "com.example.app", inApp: String? = nil) -> String {
    let entries = inApp ?? """
        [{"quantity": "1", "product_id": "com.example.gems", "transaction_id": "1000000692879214",
          "original_transaction_id": "1000000692878476", "purchase_date_ms": "1594755400000"}]
        """
    return """
        {"status": \(status), "environment": "Production",
         "receipt": {"bundle_id": "\(bundleId)", "in_app": \(entries)}}
        """
}

@Suite("interpret: HTTP statuses")
struct InterpretHTTPTests {
    static let html503 = """
        <html><head><title>503 Service Unavailable</title></head>
        <body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p></body></html>
        """

    @Test("HTML 503 with Retry-After 7: retryable, HTTP status, Retry-After, and the start of the page")
    func html503() throws {
        let step = AppStoreClient.interpret(
            httpStatus: 503, retryAfter: "7", body: Array(Self.html503.utf8), endpoint: .production
        )
        let failure = try #require(step.retryable, "expected retryable, got \(step)")
        #expect(failure.cause == .httpStatus)
        #expect(failure.httpStatus == 503)
        #expect(failure.retryAfterSeconds == 7)
        #expect(failure.appleStatus == nil)
        #expect(failure.endpoint == .production)
        #expect(failure.message.contains("503"))
        #expect(failure.message.contains("<html><head><title>503 Service Unavailable"), "\(failure.message)")
    }

    @Test("HTTP 5xx, 429 and 408 are retryable", arguments: [429, 408, 500, 502, 503, 504])
    func retryableHTTP(status: Int) throws {
        let step = AppStoreClient.interpret(httpStatus: status, retryAfter: nil, body: [], endpoint: .production)
        let failure = try #require(step.retryable, "HTTP \(status): expected retryable, got \(step)")
        #expect(failure.cause == .httpStatus)
        #expect(failure.httpStatus == status)
        #expect(failure.retryAfterSeconds == nil)
    }

    @Test("other HTTP 4xx: our configuration (a wrong URL), naming the variable to check", arguments: [
        (400, AppStoreEndpoint.production, "APPLE_PRODUCTION_URL"),
        (403, .production, "APPLE_PRODUCTION_URL"),
        (404, .production, "APPLE_PRODUCTION_URL"),
        (404, .sandbox, "APPLE_SANDBOX_URL"),
        (405, .sandbox, "APPLE_SANDBOX_URL"),
    ])
    func configurationHTTP(status: Int, endpoint: AppStoreEndpoint, variable: String) throws {
        let step = AppStoreClient.interpret(
            httpStatus: status, retryAfter: nil, body: Array("Not Found".utf8), endpoint: endpoint
        )
        let failure = try #require(step.configurationError, "HTTP \(status): expected configurationError, got \(step)")
        #expect(failure.httpStatus == status)
        #expect(failure.endpoint == endpoint)
        #expect(failure.message.contains(variable), "\(failure.message)")
    }

    @Test("a 200 carrying Apple's JSON is never judged by the HTTP status rules")
    func http200IsRead() throws {
        #expect(interpretJSON(answer()).receipt != nil)
    }

    @Test("Retry-After as an HTTP date in the past counts as 0; garbage is ignored")
    func retryAfterForms() throws {
        let past = AppStoreClient.interpret(
            httpStatus: 503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", body: [], endpoint: .production
        )
        #expect(try #require(past.retryable).retryAfterSeconds == 0)

        let garbage = AppStoreClient.interpret(httpStatus: 503, retryAfter: "soon", body: [], endpoint: .production)
        #expect(try #require(garbage.retryable).retryAfterSeconds == nil)

        let negative = AppStoreClient.interpret(httpStatus: 429, retryAfter: "-5", body: [], endpoint: .production)
        #expect(try #require(negative.retryable).retryAfterSeconds == nil)

        let spaced = AppStoreClient.interpret(httpStatus: 429, retryAfter: " 120 ", body: [], endpoint: .production)
        #expect(try #require(spaced.retryable).retryAfterSeconds == 120)
    }

    @Test("an HTTP date Retry-After in the future is converted to seconds from now")
    func retryAfterFutureDate() throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let text = formatter.string(from: Date().addingTimeInterval(600))
        let step = AppStoreClient.interpret(httpStatus: 503, retryAfter: text, body: [], endpoint: .production)
        let failure = try #require(step.retryable)
        let seconds = try #require(failure.retryAfterSeconds, "\(text) was not understood")
        #expect(seconds > 590 && seconds <= 600, "\(text) → \(seconds)")
    }
}

@Suite("interpret: Apple's statuses")
struct InterpretStatusTests {
    @Test("21007 from production: ask the sandbox")
    func sandboxRedirect() throws {
        let redirect = try #require(interpretJSON(#"{"status": 21007}"#, endpoint: .production).redirect)
        #expect(redirect.endpoint == .sandbox)
        #expect(redirect.status == 21007)
    }

    @Test("21008 from the sandbox: ask production")
    func productionRedirect() throws {
        let redirect = try #require(interpretJSON(#"{"status": 21008}"#, endpoint: .sandbox).redirect)
        #expect(redirect.endpoint == .production)
        #expect(redirect.status == 21008)
    }

    @Test("21004: configuration error naming APPLE_SHARED_SECRET")
    func sharedSecretMismatch() throws {
        let failure = try #require(interpretJSON(#"{"status": 21004}"#).configurationError)
        #expect(failure.cause == .configuration)
        #expect(failure.appleStatus == 21004)
        #expect(failure.message.contains("APPLE_SHARED_SECRET"), "\(failure.message)")
    }

    @Test("21000: configuration error about our request, not the secret")
    func badRequest() throws {
        let failure = try #require(interpretJSON(#"{"status": 21000}"#).configurationError)
        #expect(failure.appleStatus == 21000)
        #expect(!failure.message.contains("APPLE_SHARED_SECRET"))
    }

    @Test("21199 with is_retryable true: retryable, the hint kept")
    func retryableRange() throws {
        let failure = try #require(interpretJSON(#"{"status": 21199, "is_retryable": true}"#).retryable)
        #expect(failure.cause == .appleStatus)
        #expect(failure.appleStatus == 21199)
        #expect(failure.message.contains("is_retryable"))
    }

    @Test("retryable statuses without a receipt", arguments: [21001, 21005, 21009, 21100, 21150, 21199, 1, 21011, 21200])
    func retryableStatuses(status: Int) throws {
        let failure = try #require(interpretJSON(#"{"status": \#(status)}"#).retryable, "status \(status)")
        #expect(failure.cause == .appleStatus)
        #expect(failure.appleStatus == status)
    }

    @Test("21003 and 21010: invalid receipt", arguments: [21003, 21010])
    func invalidReceipt(status: Int) {
        #expect(interpretJSON(#"{"status": \#(status)}"#).invalidReceiptStatus == status)
    }

    @Test("21002: malformed data (the caller decides when to give up)")
    func malformedData() {
        #expect(interpretJSON(#"{"status": 21002}"#).malformedDataStatus == 21002)
    }

    @Test("21006 still carries the receipt: the rules judge it")
    func expiredSubscriptionStatus() throws {
        let (contents, status) = try #require(interpretJSON(answer(status: "21006")).receipt)
        #expect(status == 21006)
        #expect(contents.entries.count == 1)
    }

    @Test("status 0 without a receipt: no verdict")
    func validWithoutReceipt() throws {
        let failure = try #require(interpretJSON(#"{"status": 0, "environment": "Production"}"#).retryable)
        #expect(failure.cause == .unreadableBody)
        #expect(failure.appleStatus == 0)
    }
}

@Suite("interpret: bodies that are not what Apple should send")
struct InterpretBodyTests {
    @Test("unreadable bodies are retryable, never a verdict", arguments: [
        "[{\"status\": 0}]",                               // an array
        "",                                                // empty
        "null",
        "{}",                                              // no status
        "{\"status\": \"zero\"}",
        "{\"status\": 0, \"receipt\": {\"in_app\": {}}}",  // in_app an object
        "{\"status\": 0, \"receipt\": {\"in_app\": \"x\"}}",
        "{\"status\": 0, \"receipt\": [], \"latest_receipt_info\": []}",
        "{\"status\": 0, \"receipt\": {\"in_app\": []}, \"latest_receipt_info\": {}}",
    ])
    func unreadable(body: String) throws {
        let step = interpretJSON(body)
        let failure = try #require(step.retryable, "\(body): expected retryable, got \(step)")
        #expect(failure.cause == .unreadableBody)
        #expect(failure.appleStatus == nil)
    }

    @Test("a JSON array body names itself in the error")
    func arrayBodyHint() throws {
        let failure = try #require(interpretJSON("[1, 2, 3]").retryable)
        #expect(failure.message.contains("[1, 2, 3]"), "\(failure.message)")
    }

    @Test("status as the string \"0\" with a receipt: accepted (lenient decoding)")
    func statusAsString() throws {
        let (contents, status) = try #require(interpretJSON(answer(status: "\"0\"")).receipt)
        #expect(status == 0)
        #expect(contents.bundleId == "com.example.app")
        #expect(contents.entries.map(\.transactionId) == ["1000000692879214"])
    }

    @Test("ids and numbers as JSON numbers decode to the same strings")
    func idsAsNumbers() throws {
        let body = answer(inApp: """
            [{"quantity": 2, "product_id": "com.example.gems", "transaction_id": 1000000692879214,
              "original_transaction_id": 1000000692878476, "web_order_line_item_id": 1000000054042695,
              "purchase_date_ms": 1594755400000, "expires_date_ms": 1594755700000,
              "cancellation_date_ms": 1594755500000, "cancellation_reason": 0}]
            """)
        let purchase = try #require(interpretJSON(body).receipt?.contents.entries.first)
        #expect(purchase.transactionId == "1000000692879214")
        #expect(purchase.originalTransactionId == "1000000692878476")
        #expect(purchase.webOrderLineItemId == "1000000054042695")
        #expect(purchase.quantity == 2)
        #expect(purchase.purchaseDateMs == 1_594_755_400_000)
        #expect(purchase.expiresDateMs == 1_594_755_700_000)
        #expect(purchase.cancellationDateMs == 1_594_755_500_000)
        #expect(purchase.cancellationReason == "0")
    }

    @Test("ids above 2^53 as JSON numbers keep every digit (no detour through Double)")
    func largeNumericIds() throws {
        let body = answer(inApp: """
            [{"product_id": "com.example.gems", "transaction_id": 9007199254740993,
              "original_transaction_id": 9223372036854775807, "purchase_date_ms": 9007199254740993}]
            """)
        let purchase = try #require(interpretJSON(body).receipt?.contents.entries.first)
        #expect(purchase.transactionId == "9007199254740993")
        #expect(purchase.originalTransactionId == "9223372036854775807")
        #expect(purchase.purchaseDateMs == 9_007_199_254_740_993)
    }

    @Test("unknown fields are ignored, at every level")
    func unknownFields() throws {
        let body = """
            {"status": 0, "environment": "Production", "future_field": {"nested": [1, 2, {"x": null}]},
             "latest_receipt": "TUlJ", "pending_renewal_info": [{"auto_renew_status": "1", "new": true}],
             "receipt": {"bundle_id": "com.example.app", "adam_id": 0, "something_new": [true],
                         "in_app": [{"product_id": "com.example.gems", "transaction_id": "42",
                                     "purchase_date_ms": "1594755400000", "promotional_offer_id": "x",
                                     "subscription_group_identifier": 20652176, "shiny": {"a": 1}}]}}
            """
        let (contents, status) = try #require(interpretJSON(body).receipt, "\(interpretJSON(body))")
        #expect(status == 0)
        #expect(contents.entries.map(\.transactionId) == ["42"])
    }

    @Test("null and absent optional fields are fine")
    func nullFields() throws {
        let body = answer(inApp: """
            [{"product_id": "com.example.gems", "transaction_id": "42", "original_transaction_id": null,
              "purchase_date_ms": null, "quantity": null, "expires_date_ms": ""}]
            """)
        let purchase = try #require(interpretJSON(body).receipt?.contents.entries.first)
        #expect(purchase.originalTransactionId == "42")
        #expect(purchase.purchaseDateMs == nil)
        #expect(purchase.expiresDateMs == nil)
        #expect(purchase.quantity == 1)
    }

    @Test("an in_app of 5000 entries decodes every one")
    func largeReceipt() throws {
        let entries = (0..<5000).map { index in
            #"{"quantity":"1","product_id":"com.example.gems","transaction_id":"\#(1_000_000_000_000 + index)","#
                + #""purchase_date_ms":"\#(1_594_755_400_000 + Int64(index) * 1000)"}"#
        }
        let body = answer(inApp: "[" + entries.joined(separator: ",") + "]")
        let contents = try #require(interpretJSON(body).receipt?.contents)
        #expect(contents.entries.count == 5000)
        #expect(Set(contents.entries.map(\.transactionId)).count == 5000)
        #expect(contents.entries.last?.transactionId == "1000000004999")
    }

    @Test("an empty in_app is an accepted receipt with no entries (the rules decide)")
    func emptyInApp() throws {
        let contents = try #require(interpretJSON(answer(inApp: "[]")).receipt?.contents)
        #expect(contents.entries.isEmpty)
        #expect(contents.bundleId == "com.example.app")
    }
}
