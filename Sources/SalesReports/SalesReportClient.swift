import AppStoreClient
import CurlHTTP
import Foundation

/// Downloads Apple's daily Summary Sales Report with the App Store Connect API (Download Sales and Trends Reports):
/// `GET /v1/salesReports?filter[frequency]=DAILY&filter[reportType]=SALES&filter[reportSubType]=SUMMARY&
/// filter[vendorNumber]=…&filter[reportDate]=YYYY-MM-DD&filter[version]=1_0`, `Accept: application/a-gzip`, with a
/// bearer token signed by the App Store Connect API key (`AppStoreConnectJWT` without `bid`, valid 20 minutes at
/// most, as Apple requires for this API). One blocking call per report: for a command or a daily task.
public final class SalesReportClient: Sendable {
    /// The report version Apple's API documents for SALES / SUMMARY.
    public static let defaultReportVersion = "1_0"
    /// Apple refuses App Store Connect API tokens that live longer than 20 minutes.
    public static let maximumTokenLifetimeSeconds = 1200

    private let credentials: AppStoreConnectCredentials
    private let privateKey: ServerAPIPrivateKey
    private let transport: CurlMultiTransport
    /// Whether `transport` was made here (then shut down with the client).
    private let ownsTransport: Bool
    private let timeoutSeconds: Double
    private let maxReportBytes: Int
    private let tokenLifetimeSeconds: Int
    private let reportVersion: String

    /// - Parameters:
    ///   - transport: the libcurl client to send through; nil makes one for this client.
    ///   - timeoutSeconds: the whole download; a daily report of a large catalogue is a few MiB.
    ///   - maxReportBytes: a larger answer fails (`tooLarge`).
    ///   - tokenLifetimeSeconds: 60 to 1200.
    public init(
        credentials: AppStoreConnectCredentials, transport: CurlMultiTransport? = nil, timeoutSeconds: Double = 120,
        maxReportBytes: Int = SalesReport.maximumCompressedBytes, tokenLifetimeSeconds: Int = 1200,
        reportVersion: String = SalesReportClient.defaultReportVersion
    ) throws(SalesReportFetchError) {
        try credentials.validate()
        guard (60...Self.maximumTokenLifetimeSeconds).contains(tokenLifetimeSeconds) else {
            throw SalesReportFetchError(.configuration, "the token lifetime must be 60 to 1200 seconds (Apple's limit)")
        }
        guard timeoutSeconds > 0, maxReportBytes > 0 else {
            throw SalesReportFetchError(.configuration, "the timeout and the report size bound must be positive")
        }
        self.credentials = credentials
        privateKey = try credentials.privateKey()
        if let transport {
            self.transport = transport
            ownsTransport = false
        } else {
            do {
                self.transport = try CurlMultiTransport()
            } catch {
                throw SalesReportFetchError(.transport, "cannot start the HTTP client: \(error)")
            }
            ownsTransport = true
        }
        self.timeoutSeconds = timeoutSeconds
        self.maxReportBytes = maxReportBytes
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.reportVersion = reportVersion
    }

    deinit {
        if ownsTransport { transport.shutdown() }
    }

    /// The Summary Sales Report of `reportDate` (YYYY-MM-DD: a day as the report's time zone counts it, Pacific
    /// time for a worldwide agreement), or `.notReady` with Apple's words when Apple answers 404.
    public func fetchDailySummary(reportDate: String) throws -> SalesReportFetch {
        guard Self.isDay(reportDate) else {
            throw SalesReportFetchError(
                .configuration,
                "the report date must be a day YYYY-MM-DD, got '\(PrintableText.of(reportDate, limit: 40))'"
            )
        }
        let issuedAt = Int(Date().timeIntervalSince1970)
        let token = try AppStoreConnectJWT.sign(
            keyID: credentials.keyID, issuerID: credentials.issuerID, issuedAt: issuedAt,
            expires: issuedAt + tokenLifetimeSeconds, bundleID: nil, key: privateKey
        )
        let milliseconds = Int((timeoutSeconds * 1000).rounded(.up))
        let request = HTTPRequest(
            url: url(reportDate: reportDate), method: .get, body: [],
            headers: ["Authorization: Bearer \(token)", "Accept: application/a-gzip"],
            connectTimeoutMilliseconds: min(10_000, milliseconds), totalTimeoutMilliseconds: milliseconds,
            maxResponseBytes: maxReportBytes
        )
        switch transport.send(request) {
        case .success(let response):
            return try Self.interpret(response, maxReportBytes: maxReportBytes)
        case .failure(let error) where error.kind == .responseTooLarge:
            throw SalesReportFetchError(
                .tooLarge, "the sales report is larger than \(maxReportBytes >> 20) MiB, more than this client reads"
            )
        case .failure(let error):
            throw SalesReportFetchError(
                .transport,
                "cannot reach App Store Connect at \(credentials.apiBaseURL) (APPSTORE_CONNECT_API_URL): \(error)"
            )
        }
    }

    /// The request's URL: the base URL, the path and the filters (brackets percent-encoded).
    func url(reportDate: String) -> String {
        var base = credentials.apiBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        let filters = [
            ("frequency", "DAILY"), ("reportDate", reportDate), ("reportSubType", "SUMMARY"), ("reportType", "SALES"),
            ("vendorNumber", credentials.vendorNumber), ("version", reportVersion),
        ]
        return base + "/v1/salesReports?" + filters.map { "filter%5B\($0.0)%5D=\($0.1)" }.joined(separator: "&")
    }

    /// YYYY-MM-DD naming a day of the Gregorian calendar.
    static func isDay(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), (1...12).contains(month)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }
}
