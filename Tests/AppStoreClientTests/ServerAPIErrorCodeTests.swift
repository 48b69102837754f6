import AppStoreModel
import Foundation
import Testing

@testable import AppStoreClient

/// Every error code of Apple's App Store Server Library, with its retry rule, as a table the test holds on its own;
/// the code's rule (`ServerAPIErrorCode.errorClass`) and docs/storekit.md's table must both say the same.
@Suite("App Store Server API: every error code Apple knows, with its retry rule")
struct ServerAPIErrorCodeTests {
    /// Apple's code and what follows from it.
    static let rules: [(Int, ServerAPIClient.ErrorClass)] = [
        (4000000, .rejected), (4000002, .configuration), (4000005, .retryable), (4000006, .rejected),
        (4000008, .rejected), (4000009, .rejected), (4000010, .rejected), (4000011, .rejected), (4000012, .rejected),
        (4000013, .rejected), (4000014, .retryable), (4000015, .rejected), (4000016, .rejected),
        (4000017, .retryable), (4000018, .rejected), (4000019, .rejected), (4000020, .rejected),
        (4000021, .rejected), (4000022, .rejected), (4000023, .rejected), (4000024, .rejected), (4000025, .rejected),
        (4000026, .rejected), (4000027, .rejected), (4000028, .rejected), (4000030, .rejected), (4000031, .rejected),
        (4000032, .rejected), (4000033, .rejected), (4000034, .rejected), (4000035, .rejected), (4000036, .rejected),
        (4000037, .rejected), (4000038, .rejected), (4000039, .rejected), (4000040, .rejected), (4000041, .rejected),
        (4000042, .rejected), (4000043, .rejected), (4000047, .rejected), (4000048, .rejected), (4000161, .rejected),
        (4000162, .rejected), (4000163, .rejected), (4000164, .rejected), (4000175, .rejected), (4000183, .rejected),
        (4000185, .rejected), (4000187, .rejected), (4000211, .rejected), (4000212, .rejected), (4000213, .rejected),
        (4000215, .rejected), (4000216, .rejected), (4000218, .rejected), (4000219, .rejected), (4000224, .rejected),
        (4030004, .rejected), (4030005, .rejected), (4030007, .rejected), (4030014, .rejected), (4030016, .rejected),
        (4030017, .rejected), (4030018, .rejected), (4030019, .rejected), (4030026, .configuration),
        (4040001, .notFound), (4040002, .notFoundRetryable), (4040003, .appNotFound), (4040004, .notFoundRetryable),
        (4040005, .notFound), (4040006, .notFoundRetryable), (4040007, .configuration), (4040008, .notFound),
        (4040009, .notFound), (4040010, .notFound), (4040014, .notFound), (4040015, .notFound), (4040018, .notFound),
        (4040019, .notFound), (4040020, .notFound), (4040021, .configuration), (4090000, .rejected),
        (4090001, .rejected), (4290000, .retryable), (5000000, .retryable), (5000001, .retryable),
    ]

    @Test("all of Apple's codes are known (87 in Apple's library 6.0), each once, each with its rule")
    func everyCode() {
        #expect(Self.rules.count == 87)
        #expect(Set(Self.rules.map(\.0)).count == Self.rules.count)
        #expect(Set(ServerAPIErrorCode.allCases.map(\.rawValue)) == Set(Self.rules.map(\.0)))
        for (code, rule) in Self.rules {
            #expect(ServerAPIErrorCode(rawValue: code)?.errorClass == rule, "\(code)")
        }
    }

    @Test("an answer carrying each code is classified by the code, whatever its HTTP status says")
    func answers() throws {
        for (raw, rule) in Self.rules {
            let code = try #require(ServerAPIErrorCode(rawValue: raw))
            let body = try JSONEncoder().encode(code.payload)
            for status in [code.httpStatus, 400, 500] {
                let attempt = ServerAPIClient.interpret(
                    httpStatus: status, retryAfter: nil, body: Array(body), environment: .production
                )
                guard case .failed(let errorClass, let failure) = attempt else {
                    Issue.record("\(raw) read as a value")
                    continue
                }
                #expect(errorClass == rule, "\(raw) with HTTP \(status)")
                #expect(failure.appleStatus == raw)
                #expect(failure.outcomeLabel == String(raw))
                #expect(failure.cause == (raw == 4290000 ? .rateLimited : .appleStatus))
                #expect(failure.message.contains(code.message))
            }
        }
    }

    @Test("docs/storekit.md lists every code with the rule the code applies, and no other")
    func documented() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/storekit.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        var documented: [Int: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let code = Int(cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")))
            else { continue }
            #expect(documented[code] == nil, "\(code) listed twice")
            documented[code] = String(cells[2].prefix { $0 != " " })
            #expect(cells[1] == "`\(ServerAPIErrorCode(rawValue: code).map { "\($0)" } ?? "?")`", "\(code)'s name")
        }
        #expect(Set(documented.keys) == Set(ServerAPIErrorCode.allCases.map(\.rawValue)))
        for code in ServerAPIErrorCode.allCases {
            #expect(documented[code.rawValue] == code.errorClass.rawValue, "\(code.rawValue)")
        }
    }
}
