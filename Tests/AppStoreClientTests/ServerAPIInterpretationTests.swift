import AppStoreModel
import Foundation
import Testing

@testable import AppStoreClient

typealias ErrorClass = ServerAPIClient.ErrorClass

@Suite("App Store Server API: classifying answers")
struct ServerAPIInterpretationTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    static func errorBody(_ code: Int, _ message: String = "Apple's message.") -> [UInt8] {
        Array(#"{"errorCode": \#(code), "errorMessage": "\#(message)"}"#.utf8)
    }

    static let html = Array("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>".utf8)

    struct Row: Sendable, CustomTestStringConvertible {
        var status: Int
        var body: [UInt8]
        var expected: ErrorClass
        var cause: AppStoreFailure.Cause
        var testDescription: String { "HTTP \(status) \(String(decoding: body.prefix(40), as: UTF8.self))" }
    }

    static let rows: [Row] = [
        Row(status: 404, body: errorBody(4040010), expected: .notFound, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040005), expected: .notFound, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040001), expected: .notFound, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040002), expected: .notFoundRetryable, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040004), expected: .notFoundRetryable, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040006), expected: .notFoundRetryable, cause: .appleStatus),
        Row(status: 404, body: errorBody(4040003), expected: .appNotFound, cause: .appleStatus),
        Row(status: 404, body: errorBody(4049999), expected: .notFound, cause: .appleStatus),
        Row(status: 404, body: html, expected: .configuration, cause: .configuration),
        Row(status: 404, body: [], expected: .configuration, cause: .configuration),
        Row(status: 400, body: errorBody(4000006), expected: .rejected, cause: .appleStatus),
        Row(status: 400, body: errorBody(4000000), expected: .rejected, cause: .appleStatus),
        Row(status: 400, body: errorBody(4000002), expected: .configuration, cause: .appleStatus),
        Row(status: 400, body: errorBody(4000005), expected: .retryable, cause: .appleStatus),
        Row(status: 400, body: errorBody(4000014), expected: .retryable, cause: .appleStatus),
        Row(status: 400, body: errorBody(4000017), expected: .retryable, cause: .appleStatus),
        Row(status: 400, body: [], expected: .rejected, cause: .httpStatus),
        Row(status: 401, body: [], expected: .configuration, cause: .configuration),
        Row(status: 401, body: errorBody(4010000), expected: .configuration, cause: .appleStatus),
        Row(status: 403, body: [], expected: .configuration, cause: .configuration),
        Row(status: 429, body: errorBody(4290000), expected: .retryable, cause: .rateLimited),
        Row(status: 429, body: [], expected: .retryable, cause: .rateLimited),
        Row(status: 408, body: [], expected: .retryable, cause: .httpStatus),
        Row(status: 500, body: errorBody(5000001), expected: .retryable, cause: .appleStatus),
        Row(status: 500, body: errorBody(5000000), expected: .retryable, cause: .appleStatus),
        Row(status: 502, body: html, expected: .retryable, cause: .httpStatus),
        Row(status: 503, body: Array("{\"errorCode\": ".utf8), expected: .retryable, cause: .httpStatus),
        Row(status: 504, body: [], expected: .retryable, cause: .httpStatus),
        Row(status: 405, body: [], expected: .configuration, cause: .configuration),
        Row(status: 302, body: [], expected: .retryable, cause: .httpStatus),
    ]

    @Test("every error answer is classified by its code first, then its status", arguments: rows)
    func table(row: Row) throws {
        let attempt = ServerAPIClient.interpret(
            httpStatus: row.status, retryAfter: nil, body: row.body, environment: .production, now: Self.now
        )
        guard case .failed(let errorClass, let failure) = attempt else {
            Issue.record("HTTP \(row.status) read as a value")
            return
        }
        #expect(errorClass == row.expected)
        #expect(failure.cause == row.cause)
        #expect(failure.httpStatus == row.status)
        #expect(failure.endpoint == .production)
        #expect(failure.message.hasPrefix("HTTP \(row.status)"))
    }

    @Test("Apple's error body is decoded: the code is kept, the message quoted")
    func errorBody() throws {
        let attempt = ServerAPIClient.interpret(
            httpStatus: 404, retryAfter: nil, body: Self.errorBody(4040010, "Transaction id not found."),
            environment: .sandbox
        )
        guard case .failed(_, let failure) = attempt else { throw Unexpected() }
        #expect(failure.appleStatus == 4040010)
        #expect(failure.outcomeLabel == "4040010")
        #expect(failure.message == "HTTP 404, Apple error 4040010 (Transaction id not found.)")
        #expect(failure.description == "sandbox: HTTP 404, Apple error 4040010 (Transaction id not found.)")
    }

    @Test("configuration errors name the settings to check")
    func configurationHints() throws {
        for (status, environment, hint) in [
            (401, AppStoreEndpoint.production, "APPSTORE_PRIVATE_KEY_FILE"), (403, .production, "In-App Purchase"),
            (404, .production, "APPSTORE_API_URL"), (404, .sandbox, "APPSTORE_SANDBOX_API_URL"),
        ] {
            let attempt = ServerAPIClient.interpret(
                httpStatus: status, retryAfter: nil, body: [], environment: environment
            )
            guard case .failed(.configuration, let failure) = attempt else { throw Unexpected() }
            #expect(failure.message.contains(hint), "\(failure.message)")
        }
    }

    @Test("an HTML error page is retryable and shows its first characters")
    func htmlPage() throws {
        let attempt = ServerAPIClient.interpret(
            httpStatus: 503, retryAfter: nil, body: Self.html, environment: .production
        )
        guard case .failed(.retryable, let failure) = attempt else { throw Unexpected() }
        #expect(failure.message.contains("body starts \"<html>"))
        #expect(failure.outcomeLabel == "http_503")
    }

    @Test("Retry-After as epoch milliseconds (Apple's spelling), as seconds, and as an HTTP date")
    func retryAfter() throws {
        let cases: [(String, Double)] = [
            ("1700000002500", 2.5), ("1699999990000", 0), ("7", 7), ("0", 0),
            ("Tue, 14 Nov 2023 22:13:40 GMT", 20),
        ]
        for (header, seconds) in cases {
            let attempt = ServerAPIClient.interpret(
                httpStatus: 429, retryAfter: header, body: Self.errorBody(4290000), environment: .production,
                now: Self.now
            )
            guard case .failed(.retryable, let failure) = attempt else { throw Unexpected() }
            let parsed = try #require(failure.retryAfterSeconds, "\(header)")
            #expect(abs(parsed - seconds) < 0.001, "\(header): \(parsed)")
            #expect(failure.cause == .rateLimited)
        }
        let garbage = ServerAPIClient.interpret(
            httpStatus: 429, retryAfter: "soon", body: [], environment: .production, now: Self.now
        )
        guard case .failed(_, let failure) = garbage else { throw Unexpected() }
        #expect(failure.retryAfterSeconds == nil)
    }

    @Test("a 2xx body is handed to the operation, which finds truncated JSON and HTML retryable")
    func successfulBodies() throws {
        let good = Array(#"{"signedTransactionInfo": "a.b.c"}"#.utf8)
        guard case .value(let body) = ServerAPIClient.interpret(
            httpStatus: 200, retryAfter: nil, body: good, environment: .production
        ) else { throw Unexpected() }
        guard case .value("a.b.c") = ServerAPIClient.signedTransactionInfo(body, environment: .production) else {
            throw Unexpected()
        }
        for broken in [Array(good.prefix(good.count / 2)), Self.html, [], Array(#"{"other": 1}"#.utf8)] {
            let read = ServerAPIClient.signedTransactionInfo(broken, environment: .sandbox)
            guard case .failed(.retryable, let failure) = read else { throw Unexpected() }
            #expect(failure.cause == .unreadableBody)
            #expect(failure.endpoint == .sandbox)
        }
    }

    @Test("order lookup: status 0 gives the transactions, 1 is not found, anything else is unreadable")
    func orderLookup() throws {
        let valid = Array(#"{"status": 0, "signedTransactions": ["x.y.z"]}"#.utf8)
        guard case .value(["x.y.z"]) = ServerAPIClient.orderTransactions(valid, environment: .production) else {
            throw Unexpected()
        }
        let invalid = Array(#"{"status": 1}"#.utf8)
        let notFound = ServerAPIClient.orderTransactions(invalid, environment: .production)
        guard case .failed(.notFound, let failure) = notFound else { throw Unexpected() }
        #expect(failure.outcomeLabel == "1")
        guard case .failed(.retryable, _) = ServerAPIClient.orderTransactions(
            Array(#"{"status": 7}"#.utf8), environment: .production
        ) else { throw Unexpected() }
    }
}

@Suite("App Store Server API: production, then the sandbox")
struct ServerAPIEnvironmentTests {
    static func failure(_ environment: AppStoreEndpoint, _ code: Int) -> AppStoreFailure {
        AppStoreFailure(cause: .appleStatus, message: "code \(code)", endpoint: environment, appleStatus: code)
    }

    typealias Attempt = ServerAPIClient.Attempt<String>

    @Test("the sandbox's answer after production's not-found decides")
    func combined() {
        let cases: [(ErrorClass, ErrorClass, String)] = [
            (.notFound, .notFound, "notFound"),
            (.notFound, .notFoundRetryable, "retryable"),
            (.notFoundRetryable, .notFound, "retryable"),
            (.appNotFound, .notFound, "notFound"),
            (.notFound, .appNotFound, "notFound"),
            (.appNotFound, .appNotFound, "configurationError"),
            (.notFound, .retryable, "retryable"),
            (.notFound, .configuration, "configurationError"),
            (.notFound, .rejected, "rejected"),
        ]
        for (production, sandbox, expected) in cases {
            let result = ServerAPIClient.result(
                Attempt.failed(sandbox, Self.failure(.sandbox, 2)), from: .sandbox,
                after: (production, Self.failure(.production, 1))
            )
            #expect(Self.name(result) == expected, "\(production) then \(sandbox)")
            if sandbox.isNotFound {
                #expect(result.failure?.message.hasPrefix("production: code 1; sandbox: code 2") == true)
            }
        }
        let found = ServerAPIClient.result(
            Attempt.value("jws"), from: .sandbox, after: (.notFound, Self.failure(.production, 4040010))
        )
        guard case .success("jws", environment: .sandbox) = found else {
            Issue.record("\(found)")
            return
        }
    }

    @Test("one environment alone: not-found is definite, its retryable form is not, an unknown app is ours")
    func single() {
        let cases: [(ErrorClass, String)] = [
            (.notFound, "notFound"), (.notFoundRetryable, "retryable"), (.appNotFound, "configurationError"),
            (.retryable, "retryable"), (.configuration, "configurationError"), (.rejected, "rejected"),
        ]
        for (errorClass, expected) in cases {
            let attempt = Attempt.failed(errorClass, Self.failure(.production, 1))
            let result = ServerAPIClient.result(attempt, from: .production)
            #expect(Self.name(result) == expected, "\(errorClass)")
        }
        #expect(ErrorClass.allCases.filter(\.isNotFound) == [.notFound, .notFoundRetryable, .appNotFound])
    }

    static func name<Value>(_ result: ServerAPIResult<Value>) -> String {
        switch result {
        case .success: "success"
        case .notFound: "notFound"
        case .rejected: "rejected"
        case .configurationError: "configurationError"
        case .retryable: "retryable"
        }
    }
}

struct Unexpected: Error {}
