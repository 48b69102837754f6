import Foundation
import NIOCore

extension FakeAppStoreRoutes {
    /// Answers an App Store Server API request or an App Store Connect API sales report request (after the configured
    /// latency), or one of the fake's `/fake/` routes
    /// (at once, or once a notification asked for has been sent); false when `path` is neither.
    func serverAPI(_ request: FakeRequest, path: String, to writer: some ResponseWriter) -> Bool {
        let api = state.serverAPI
        let bytes = Array(request.body.readableBytesView)
        if path == SalesReportResponder.path {
            let reports = SalesReportResponder(reports: api.salesReports, authorization: api.connectAuthorization)
            let answer = reports.reply(
                method: request.method.rawValue, uri: request.uri, authorization: request.authorization, now: Date()
            )
            var generator = SystemRandomNumberGenerator()
            deliver(.http(answer), to: writer, using: &generator)
            return true
        }
        if path.hasPrefix("/fake/") {
            // A notification's answer comes from the sender's thread: back to the writer's event loop.
            let loop = writer.eventLoop
            let target = NIOLoopBound((routes: self, writer: writer), eventLoop: loop)
            return FakeAdminResponder(api: api).reply(method: request.method.rawValue, path: path, body: bytes) {
                answer in
                loop.execute { target.value.routes.send(.http(answer), to: target.value.writer) }
            }
        }
        var generator = SystemRandomNumberGenerator()
        let apiRequest = ServerAPIResponder.Request(
            method: request.method.rawValue, uri: request.uri, authorization: request.authorization,
            body: bytes, nowMilliseconds: Int64(Date().timeIntervalSince1970 * 1_000), uptime: api.uptime
        )
        guard let answer = ServerAPIResponder(api: api).reply(to: apiRequest, using: &generator) else { return false }
        deliver(.http(answer), to: writer, using: &generator)
        return true
    }
}
