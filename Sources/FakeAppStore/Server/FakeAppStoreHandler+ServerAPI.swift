import Foundation
import NIOCore
import NIOHTTP1

extension FakeAppStoreHandler {
    /// Answers an App Store Server API request or an App Store Connect API sales report request (after the configured
    /// latency), or one of the fake's `/fake/` routes
    /// (at once, or once a notification asked for has been sent); false when `path` is neither.
    func serverAPI(context: ChannelHandlerContext, head: HTTPRequestHead, path: String, body: ByteBuffer) -> Bool {
        let api = state.serverAPI
        let bytes = Array(body.readableBytesView)
        if path == SalesReportResponder.path {
            let reports = SalesReportResponder(reports: api.salesReports, authorization: api.connectAuthorization)
            let answer = reports.reply(
                method: head.method.rawValue, uri: head.uri, authorization: head.headers.first(name: "Authorization"),
                now: Date()
            )
            var generator = SystemRandomNumberGenerator()
            deliver(.http(answer), context: context, head: head, using: &generator)
            return true
        }
        if path.hasPrefix("/fake/") {
            let loop = context.eventLoop
            let target = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            return FakeAdminResponder(api: api).reply(method: head.method.rawValue, path: path, body: bytes) { answer in
                loop.execute { target.value.handler.send(.http(answer), context: target.value.context, head: head) }
            }
        }
        var generator = SystemRandomNumberGenerator()
        let request = ServerAPIResponder.Request(
            method: head.method.rawValue, uri: head.uri, authorization: head.headers.first(name: "Authorization"),
            body: bytes, nowMilliseconds: Int64(Date().timeIntervalSince1970 * 1_000), uptime: api.uptime
        )
        guard let answer = ServerAPIResponder(api: api).reply(to: request, using: &generator) else { return false }
        deliver(.http(answer), context: context, head: head, using: &generator)
        return true
    }
}
