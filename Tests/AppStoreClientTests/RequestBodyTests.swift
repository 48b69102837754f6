@testable import AppStoreClient
import AppleFixtureFiles
import Foundation
import Testing

@Suite("AppStoreClient.requestBody")
struct RequestBodyTests {
    private func object(_ body: [UInt8]) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(body))
        return try #require(object as? [String: Any], "the body is not a JSON object")
    }

    @Test("exactly receipt-data, password and exclude-old-transactions: false")
    func keys() throws {
        let body = AppStoreClient.requestBody(receiptData: "TUlJQUFB", password: "s3cret/+=")
        let json = try object(body)
        #expect(Set(json.keys) == ["receipt-data", "password", "exclude-old-transactions"])
        #expect(json["receipt-data"] as? String == "TUlJQUFB")
        #expect(json["password"] as? String == "s3cret/+=")
        #expect(json["exclude-old-transactions"] as? Bool == false)
        // A JSON boolean, not the number 0 or the string "false".
        let text = try #require(String(bytes: body, encoding: .utf8))
        #expect(text.contains("\"exclude-old-transactions\":false"), "\(text)")
    }

    @Test("line breaks and spaces are removed from the receipt", arguments: [
        "TUlJ\nQUFB", "TUlJ\r\nQUFB\r\n", " TUlJ QUFB ", "\tTUlJ\n\nQUFB\n",
    ])
    func lineBreaks(receipt: String) throws {
        let json = try object(AppStoreClient.requestBody(receiptData: receipt, password: "p"))
        #expect(json["receipt-data"] as? String == "TUlJQUFB")
    }

    @Test("the real receipt, wrapped at 76 columns as iOS does, arrives whole and unwrapped", .needsAppleFixtures)
    func realReceipt() throws {
        let bytes = try AppleFixtures.bytes(AppleFixtures.sandboxReceiptName)
        let receipt = try #require(String(bytes: bytes, encoding: .utf8))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var wrapped = ""
        var rest = Substring(receipt)
        while !rest.isEmpty {
            wrapped += rest.prefix(76) + "\r\n"
            rest = rest.dropFirst(76)
        }
        let json = try object(AppStoreClient.requestBody(receiptData: wrapped, password: "p"))
        let sent = try #require(json["receipt-data"] as? String)
        #expect(sent == receipt)
        #expect(Data(base64Encoded: sent) != nil)
    }
}
