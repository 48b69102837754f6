import AppStoreClient
import AppleFixtureFiles
import Foundation
import ReceiptRules
import Testing

/// Real Apple data from `../shared/fixtures/apple` (see its README), read where it is, never copied.
enum AppleFixtures {
    static func bytes(_ name: String) throws -> [UInt8] { try AppleFixtureFiles.bytes(name) }

    /// Apple's verifyReceipt answer for RevenueCat's sandbox receipt: status 0, bundle com.revenuecat.sampleapp,
    /// 9 `in_app` and 9 `latest_receipt_info` entries.
    static let sandboxResponseName = "revenuecat-sandbox-verifyReceipt-response.json"
    static let sandboxReceiptName = "revenuecat-sandbox-receipt.b64"

    static func sandboxResponse() throws -> [UInt8] { try bytes(sandboxResponseName) }

    /// The same answer parsed by Foundation, to cross-check the decoder against.
    static func sandboxResponseObject() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(try sandboxResponse()))
        return try #require(object as? [String: Any], "\(sandboxResponseName) is not a JSON object")
    }
}

/// Pattern-matching shortcuts: `AppStoreResult` is not Equatable (it carries failures with free-text messages).
extension AppStoreClient.Step {
    var receipt: (contents: ReceiptContents, status: Int)? {
        if case .done(.receipt(let contents, let status)) = self { return (contents, status) }
        return nil
    }

    var redirect: (endpoint: AppStoreEndpoint, status: Int)? {
        if case .redirect(let endpoint, let status) = self { return (endpoint, status) }
        return nil
    }

    var retryable: AppStoreFailure? {
        if case .done(.retryable(let failure)) = self { return failure }
        return nil
    }

    var configurationError: AppStoreFailure? {
        if case .done(.configurationError(let failure)) = self { return failure }
        return nil
    }

    var invalidReceiptStatus: Int? {
        if case .done(.invalidReceipt(let status)) = self { return status }
        return nil
    }

    var malformedDataStatus: Int? {
        if case .done(.malformedData(let status)) = self { return status }
        return nil
    }
}

/// Calls the pure interpreter with a JSON text and HTTP 200.
func interpretJSON(_ json: String, endpoint: AppStoreEndpoint = .production) -> AppStoreClient.Step {
    AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: Array(json.utf8), endpoint: endpoint)
}
