import AppStoreModel
import Foundation
import Testing

@testable import AppStoreClient

@Suite("App Store Server API: request paths")
struct ServerAPIRequestTests {
    @Test("transaction ids must be digits: anything else is refused before sending")
    func transactionIds() throws {
        let request = try ServerAPIRequest.transactionInfo(transactionId: "2000000123456789")
        #expect(
            request.url(base: "https://api.storekit.apple.com/")
                == "https://api.storekit.apple.com/inApps/v1/transactions/2000000123456789"
        )
        #expect(request.method == .get)
        let tooLong = String(repeating: "1", count: 33)
        for bad in ["", "12a", "../1", "1/2", "1?x=2", " 1", "１２", "1%2F", tooLong, "-1"] {
            let error = #expect(throws: AppStoreFailure.self, "\(bad)") {
                try ServerAPIRequest.transactionInfo(transactionId: bad)
            }
            #expect(error?.cause == .invalidRequest)
            #expect(error?.message.contains("transaction_info: not sent") == true)
            #expect(throws: AppStoreFailure.self) {
                try ServerAPIRequest.transactionHistory(transactionId: bad, revision: nil)
            }
        }
    }

    @Test("test notifications and app transactions: their paths; a token stays one segment, an id is digits")
    func testNotificationsAndAppTransactions() throws {
        let request = ServerAPIRequest.requestTestNotification()
        #expect(request.method == .post && request.path == "/inApps/v1/notifications/test" && request.body.isEmpty)
        let status = try ServerAPIRequest.testNotificationStatus(token: "ce3af791-365e-4c60-841b-1674b43c1609")
        #expect(status.method == .get && status.path == "/inApps/v1/notifications/test/ce3af791-365e-4c60-841b-1674b43c1609")
        #expect(try ServerAPIRequest.testNotificationStatus(token: "../x?y").path == "/inApps/v1/notifications/test/%2E%2E%2Fx%3Fy")
        #expect(throws: AppStoreFailure.self) { try ServerAPIRequest.testNotificationStatus(token: "") }
        #expect(throws: AppStoreFailure.self) {
            try ServerAPIRequest.testNotificationStatus(token: String(repeating: "a", count: 129))
        }
        let app = try ServerAPIRequest.appTransactionInfo(transactionId: "704289572311573098")
        #expect(app.method == .get && app.path == "/inApps/v1/transactions/appTransactions/704289572311573098")
        for bad in ["", "12a", "../1", "1/2"] {
            #expect(throws: AppStoreFailure.self, "\(bad)") { try ServerAPIRequest.appTransactionInfo(transactionId: bad) }
        }
        // Their error codes: no URL in App Store Connect is ours to fix; an unknown token or no app transaction is
        // not found (production's sends the sandbox a try).
        #expect(ServerAPIClient.classify(httpStatus: 404, errorCode: 4040007) == .configuration)
        #expect(ServerAPIClient.classify(httpStatus: 404, errorCode: 4040008) == .notFound)
        #expect(ServerAPIClient.classify(httpStatus: 404, errorCode: 4040019) == .notFound)
    }

    @Test("order ids are percent-encoded so they stay one path segment")
    func orderIds() throws {
        let cases = [
            ("MK5TTTVWJH", "MK5TTTVWJH"), ("a/b", "a%2Fb"), ("..", "%2E%2E"), ("a?b#c", "a%3Fb%23c"),
            ("é", "%C3%A9"), ("a b+c", "a%20b%2Bc"), ("x%2F", "x%252F"),
        ]
        for (orderId, segment) in cases {
            let request = try ServerAPIRequest.orderLookup(orderId: orderId)
            #expect(request.path == "/inApps/v1/lookup/\(segment)")
        }
        #expect(throws: AppStoreFailure.self) { try ServerAPIRequest.orderLookup(orderId: "") }
        #expect(throws: AppStoreFailure.self) {
            try ServerAPIRequest.orderLookup(orderId: String(repeating: "A", count: 129))
        }
    }

    @Test("history v2 carries its query (productId repeated, dates, sort) before the revision; bad filters are not sent")
    func historyQuery() throws {
        let query = TransactionHistoryQuery(sort: .descending, productIds: ["coins.100", "a b"], startDate: 1_700_000_000_000)
        let request = try ServerAPIRequest.transactionHistory(transactionId: "42", query: query, revision: "r+1")
        #expect(
            request.url(base: "http://127.0.0.1:9")
                == "http://127.0.0.1:9/inApps/v2/history/42?startDate=1700000000000&productId=coins%2E100"
                + "&productId=a%20b&sort=DESCENDING&revision=r%2B1"
        )
        #expect(throws: AppStoreFailure.self) {
            try ServerAPIRequest.transactionHistory(
                transactionId: "42", query: TransactionHistoryQuery(productIds: [""]), revision: nil
            )
        }
        #expect(throws: AppStoreFailure.self) {
            try ServerAPIRequest.transactionHistory(
                transactionId: "42", query: TransactionHistoryQuery(startDate: 5, endDate: 5), revision: nil
            )
        }
    }

    @Test("history v2 carries the revision as an encoded query parameter")
    func history() throws {
        let first = try ServerAPIRequest.transactionHistory(transactionId: "42", revision: nil)
        #expect(first.url(base: "http://127.0.0.1:9/sandbox") == "http://127.0.0.1:9/sandbox/inApps/v2/history/42")
        let next = try ServerAPIRequest.transactionHistory(transactionId: "42", revision: "a+b/c=")
        #expect(next.url(base: "http://127.0.0.1:9") == "http://127.0.0.1:9/inApps/v2/history/42?revision=a%2Bb%2Fc%3D")
    }

    @Test("notification history is a POST of the request as JSON, with the pagination token in the query")
    func notificationHistory() throws {
        let body = NotificationHistoryRequest(startDate: 1, endDate: 2, transactionId: "7", onlyFailures: true)
        let request = try ServerAPIRequest.notificationHistory(body, paginationToken: "tok en")
        #expect(request.method == .post)
        #expect(request.url(base: "https://x") == "https://x/inApps/v1/notifications/history?paginationToken=tok%20en")
        let sent = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        #expect(sent?["startDate"] as? Int == 1)
        #expect(sent?["endDate"] as? Int == 2)
        #expect(sent?["transactionId"] as? String == "7")
        #expect(sent?["onlyFailures"] as? Bool == true)
        #expect(sent?["notificationType"] == nil)
        var bad = body
        bad.transactionId = "7; DROP"
        #expect(throws: AppStoreFailure.self) { try ServerAPIRequest.notificationHistory(bad, paginationToken: nil) }
    }
}
