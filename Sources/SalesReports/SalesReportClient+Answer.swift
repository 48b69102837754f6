import AppStoreModel
import CurlHTTP
import Foundation

extension SalesReportClient {
    /// What an answer of `GET /v1/salesReports` means: the report (200, a gzip file), not ready (404 with Apple's
    /// error JSON), or an error naming what to fix. No I/O.
    static func interpret(
        _ response: HTTPResponse, maxReportBytes: Int
    ) throws(SalesReportFetchError) -> SalesReportFetch {
        let status = response.status
        let apple = AppleErrors(response.body)
        let said = apple.map { " (\($0.summary))" } ?? ""
        switch status {
        case 200:
            guard response.body.starts(with: [0x1F, 0x8B]) else {
                throw SalesReportFetchError(
                    .unexpectedAnswer,
                    "App Store Connect answered 200 with \(describe(response)), not the gzip-compressed report; check "
                        + "APPSTORE_CONNECT_API_URL", status: status
                )
            }
            return .report(response.body)
        case 404:
            guard let apple else {
                throw SalesReportFetchError(
                    .unexpectedAnswer,
                    "the server answered 404 with \(describe(response)), not App Store Connect's error: check "
                        + "APPSTORE_CONNECT_API_URL (the API's base URL, without /v1)", status: status
                )
            }
            return .notReady(apple.detail)
        case 401:
            throw SalesReportFetchError(
                .unauthorized,
                "App Store Connect refused the token\(said.isEmpty ? " (401)" : said): check APPSTORE_CONNECT_KEY_ID, "
                    + "APPSTORE_CONNECT_ISSUER_ID and APPSTORE_CONNECT_PRIVATE_KEY_FILE (an App Store Connect API key "
                    + "from Users and Access > Integrations > App Store Connect API, not the In-App Purchase key, "
                    + "and not revoked)", status: status
            )
        case 403:
            throw SalesReportFetchError(
                .forbidden,
                "App Store Connect does not let this key download sales reports\(said.isEmpty ? " (403)" : said): give "
                    + "the key of APPSTORE_CONNECT_KEY_ID the Admin, Finance or Sales role, and check that "
                    + "APPSTORE_VENDOR_NUMBER is your vendor number and the Paid Apps agreement is in effect",
                status: status
            )
        case 400:
            throw SalesReportFetchError(
                .badRequest,
                "App Store Connect refused the request\(said.isEmpty ? " (400)" : said): check APPSTORE_VENDOR_NUMBER "
                    + "and the report date", status: status
            )
        case 429:
            throw SalesReportFetchError(
                .rateLimited, "App Store Connect is limiting requests (429)\(said); try again later", status: status
            )
        case 500...599:
            throw SalesReportFetchError(
                .unavailable, "App Store Connect is unavailable (\(status))\(said); try again later", status: status
            )
        default:
            throw SalesReportFetchError(
                .unexpectedAnswer, "App Store Connect answered \(status) with \(describe(response))", status: status
            )
        }
    }

    /// "text/html, 1234 bytes: <html>…", control characters escaped, at most 80 characters of the body.
    static func describe(_ response: HTTPResponse) -> String {
        let type = PrintableText.of(response.header("Content-Type") ?? "no Content-Type", limit: 100)
        let start = PrintableText.of(String(decoding: response.body.prefix(80), as: UTF8.self), limit: 80)
        return "\(type), \(response.body.count) bytes" + (start.isEmpty ? "" : ": \(start)")
    }
}

/// The App Store Connect API's error document: `{"errors": [{"status", "code", "title", "detail"}]}`, the first
/// error read. Nil for anything else (an HTML page, a body of another server).
struct AppleErrors {
    var code: String
    var title: String
    var detail: String

    init?(_ body: [UInt8]) {
        guard body.count <= 64 * 1024,
            let document = try? BoundedJSON.decode(Document.self, from: body), let first = document.errors.first
        else { return nil }
        code = PrintableText.of(first.code ?? "", limit: 100)
        title = PrintableText.of(first.title ?? "", limit: 300)
        let detail = PrintableText.of(first.detail ?? "", limit: 300)
        self.detail = detail.isEmpty ? (title.isEmpty ? "the report is not available" : title) : detail
    }

    private struct Document: Decodable {
        var errors: [Entry]
    }

    private struct Entry: Decodable {
        var code: String?
        var title: String?
        var detail: String?
    }

    /// "CODE: detail", at most 300 characters.
    var summary: String {
        code.isEmpty ? detail : "\(code): \(detail)"
    }
}
