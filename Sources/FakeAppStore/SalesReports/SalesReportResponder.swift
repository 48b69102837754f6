import Foundation

/// Answers `GET /v1/salesReports` as the App Store Connect API does, for the fake's `FakeSalesReports`: a token of an
/// App Store Connect API key (else 401), the fake's vendor number (else 403), the filters of a daily Summary Sales
/// Report (else 400), then the day's report gzip-compressed (`application/a-gzip`), or 404 with Apple's error document
/// while it is not ready or when nothing was sold that day. No I/O: the clock arrives as an argument.
struct SalesReportResponder: Sendable {
    static let path = "/v1/salesReports"

    let reports: FakeSalesReports
    let authorization: ServerAPIAuthorization

    func reply(method: String, uri: String, authorization header: String?, now: Date) -> FakeHTTPAnswer {
        let (_, query) = ServerAPIResponder.split(uri)
        guard method == "GET" else {
            return Self.error(405, "METHOD_NOT_ALLOWED", "The request method is not valid for the resource path.", "")
        }
        let seconds = Int64(now.timeIntervalSince1970)
        if case .failure(let refusal) = authorization.check(authorization: header, now: seconds) {
            var answer = Self.error(
                401, "NOT_AUTHORIZED", "Authentication credentials are missing or invalid.",
                "Provide a properly configured and signed bearer token, and make sure that it has not expired."
            )
            answer.headers.append(("X-Fake-AppStore-Reason", refusal.reason))
            return answer
        }
        let expected = [
            "filter[frequency]": "DAILY", "filter[reportType]": "SALES", "filter[reportSubType]": "SUMMARY",
            "filter[version]": "1_0",
        ]
        for (name, value) in expected.sorted(by: { $0.key < $1.key }) where query[name] != value {
            return Self.error(
                400, "PARAMETER_ERROR.INVALID", "A parameter has an invalid value",
                "The fake App Store serves daily Summary Sales Reports only: \(name) must be \(value)."
            )
        }
        guard query["filter[vendorNumber]"] == reports.vendorNumber else {
            return Self.error(
                403, "FORBIDDEN_ERROR", "This request is forbidden for security reasons",
                "You do not have access to the reports of this vendor number."
            )
        }
        guard let day = query["filter[reportDate]"], let answer = try? reports.answer(day: day, now: now) else {
            return Self.error(
                400, "PARAMETER_ERROR.INVALID", "A parameter has an invalid value",
                "Invalid date. For daily and weekly reports, use format YYYY-MM-DD."
            )
        }
        switch answer {
        case .report(let text):
            guard let gzip = FakeGzip.compress(text) else { return FakeHTTPAnswer(status: 500) }
            return FakeHTTPAnswer(status: 200, headers: [("Content-Type", "application/a-gzip")], body: gzip)
        case .notReady:
            return Self.error(
                404, "NOT_FOUND", "The specified resource does not exist",
                "The report for \(day) is not available yet. Daily reports are available the next day."
            )
        case .noSales:
            return Self.error(
                404, "NOT_FOUND", "The specified resource does not exist", "There were no sales for the date specified."
            )
        }
    }

    /// The App Store Connect API's error document.
    static func error(_ status: Int, _ code: String, _ title: String, _ detail: String) -> FakeHTTPAnswer {
        let entry = ["id": UUID().uuidString, "status": String(status), "code": code, "title": title, "detail": detail]
        let body = (try? JSONSerialization.data(withJSONObject: ["errors": [entry]], options: [.sortedKeys])) ?? Data()
        return FakeHTTPAnswer.json(status, Array(body))
    }
}
