import AppleFixtureFiles
import Foundation
import Testing
import Workers

@Suite("ReceiptInput.problem")
struct ReceiptInputTests {
    static let limit = 1 << 20  // the worker's default maxReceiptBytes

    @Test("valid base64, with the line breaks and spaces iOS and proxies add", arguments: [
        "TUlJ", "TUlJ\nQUFB", "TUlJ\r\nQUFB\r\n", " TUlJ QUFB ", "\tTUlJ\n", "TQ==", "TUk=", "TUlJQQ==", "TU\nlJ\nQQ\n==",
        "ab+/", "AAAA",
    ])
    func valid(receipt: String) {
        #expect(ReceiptInput.problem(receipt, maxBytes: Self.limit) == nil, "\(receipt.debugDescription)")
    }

    @Test("the real sandbox receipt, as stored and wrapped at 76 columns", .needsAppleFixtures)
    func realReceipt() throws {
        let receipt = try WorkersFixtures.text(WorkersFixtures.sandboxReceiptName)
        #expect(receipt.utf8.count > 10_000)
        #expect(ReceiptInput.problem(receipt, maxBytes: Self.limit) == nil)
        let trimmed = receipt.trimmingCharacters(in: .whitespacesAndNewlines)
        var wrapped = ""
        var rest = Substring(trimmed)
        while !rest.isEmpty {
            wrapped += rest.prefix(76) + "\n"
            rest = rest.dropFirst(76)
        }
        #expect(ReceiptInput.problem(wrapped, maxBytes: Self.limit) == nil)
    }

    @Test("missing")
    func missing() throws {
        let problem = try #require(ReceiptInput.problem(nil, maxBytes: Self.limit))
        #expect(problem.contains("missing"))
    }

    @Test("empty, or only whitespace", arguments: ["", "   \n", "\r\n\t "])
    func empty(receipt: String) throws {
        let problem = try #require(ReceiptInput.problem(receipt, maxBytes: Self.limit))
        #expect(problem.contains("empty"), "\(problem)")
    }

    @Test("not base64", arguments: [
        "not base64!",
        "TUl",            // length not a multiple of 4
        "TUlJQ",
        "TU=I",           // data after padding
        "TUlJ===",        // three padding characters
        "TUlJ====",
        "====",
        "=TUl",
        "TUlJ\u{0}QUFB",  // NUL
        "TUlJ\u{0}",
        "TUlJQUF😀",      // emoji
        "TUlJ😀==",
        "TUlJQUFé",
        "TUlJ-_AA",       // base64url is not what Apple takes
        "TUlJ,QUFB",
    ])
    func notBase64(receipt: String) throws {
        let problem = try #require(ReceiptInput.problem(receipt, maxBytes: Self.limit), "\(receipt.debugDescription)")
        #expect(problem.contains("not base64"), "\(problem)")
    }

    @Test("bytes that are not UTF-8 (decoded with replacement characters)")
    func notUTF8() throws {
        let receipt = String(decoding: Array("TUlJ".utf8) + [0xFF, 0xFE, 0x41, 0x41], as: UTF8.self)
        #expect(ReceiptInput.problem(receipt, maxBytes: Self.limit) != nil)
    }

    @Test("10 MiB against a 1 MiB limit: refused, naming the limit")
    func tooLarge() throws {
        let receipt = String(repeating: "A", count: 10 << 20)
        let problem = try #require(ReceiptInput.problem(receipt, maxBytes: Self.limit))
        #expect(problem.contains("\(Self.limit)"), "\(problem)")
        #expect(problem.contains("\(10 << 20)"), "\(problem)")
    }

    @Test("the limit is inclusive, counted in UTF-8 bytes")
    func limitBoundary() {
        #expect(ReceiptInput.problem("TUlJ", maxBytes: 4) == nil)
        #expect(ReceiptInput.problem("TUlJ", maxBytes: 3) != nil)
        #expect(ReceiptInput.problem("TUlJ\n", maxBytes: 4) != nil)
    }
}

/// Real Apple data from `../shared/fixtures/apple` (see its README), read where it is, never copied.
enum WorkersFixtures {
    static let sandboxReceiptName = "revenuecat-sandbox-receipt.b64"
    static let sandboxResponseName = "revenuecat-sandbox-verifyReceipt-response.json"

    static func bytes(_ name: String) throws -> [UInt8] { try AppleFixtureFiles.bytes(name) }

    static func text(_ name: String) throws -> String {
        try #require(String(bytes: try bytes(name), encoding: .utf8), "\(name) is not UTF-8")
    }
}
