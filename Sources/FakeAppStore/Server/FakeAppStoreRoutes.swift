import AppStoreModel
import Foundation
import NIOCore
import NIOHTTP1

/// The fake's routes, whichever HTTP version carried the request: POST /verifyReceipt, POST /sandbox/verifyReceipt,
/// GET /stats, POST /stats/reset, and the App Store Server API with the fake's own routes
/// (`FakeAppStoreRoutes+ServerAPI.swift`). Decides each answer and its delay (latency, jitter, faults) and hands it
/// to the request's `ResponseWriter`. Shared by every connection.
struct FakeAppStoreRoutes: Sendable {
    let state: FakeAppStoreState
    private let responder: VerifyReceiptResponder

    init(state: FakeAppStoreState) {
        self.state = state
        self.responder = VerifyReceiptResponder(state: state)
    }

    func route(_ request: FakeRequest, to writer: some ResponseWriter) {
        let path = request.path
        if request.method == .POST, let endpoint = Endpoint(path: path) {
            verifyReceipt(request, endpoint: endpoint, to: writer)
            return
        }
        if serverAPI(request, path: path, to: writer) {
            return
        }
        switch (request.method, path) {
        case (.GET, "/stats"):
            writer.respond(status: 200, headers: Self.json, body: encodeStats(), close: false)
        case (.POST, "/stats/reset"):
            state.resetStats()
            writer.respond(status: 200, headers: Self.json, body: encodeStats(), close: false)
        default:
            writer.respond(status: 404, headers: Self.json, body: Self.notFound, close: false)
        }
    }

    /// A request body past `state.maxBodyBytes`: 413, and the connection closes (HTTP/1.1) or the stream ends.
    func bodyTooLarge(to writer: some ResponseWriter) {
        writer.respond(
            status: 413, headers: [("Content-Type", "text/plain")], body: Self.tooLarge, close: true
        )
    }

    private func verifyReceipt(_ request: FakeRequest, endpoint: Endpoint, to writer: some ResponseWriter) {
        let settings = state.currentSettings
        var generator = SystemRandomNumberGenerator()
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        let (reply, answer) = responder.reply(
            toBody: Array(request.body.readableBytesView),
            endpoint: endpoint,
            faults: settings.faults,
            now: now,
            using: &generator
        )
        state.record(endpoint: endpoint, answer: answer, arrivedAtMs: now)
        deliver(reply, to: writer, using: &generator)
    }

    /// Sends `reply` after the configured latency and jitter (and a slow fault's extra delay), counting how late after
    /// that it went out (`FakeAppStoreStats.delayedAnswers`).
    func deliver<Generator: RandomNumberGenerator>(
        _ reply: FakeReply, to writer: some ResponseWriter, using generator: inout Generator
    ) {
        let settings = state.currentSettings
        var delay = settings.latencyMilliseconds
        if settings.jitterMilliseconds > 0 {
            delay += Int.random(in: 0...settings.jitterMilliseconds, using: &generator)
        }
        var reply = reply
        switch reply {
        case .http(let answer):
            delay += answer.extraDelayMilliseconds
        case .answer(let response):
            // Encoded now, while the request is read: a wave of answers due together then only has to be sent.
            reply = .http(.json(200, response.jsonBytes()))
        default:
            break
        }
        guard delay > 0 else {
            send(reply, to: writer)
            return
        }
        let due = NIODeadline.now() + .milliseconds(Int64(delay))
        writer.after(milliseconds: delay) {
            // Only what goes out as an answer: a reset, a refusal or a hang sends none.
            if reply.isAnswer {
                state.recordDelayedAnswer(lateMilliseconds: Double((NIODeadline.now() - due).nanoseconds) / 1e6)
            }
            send(reply, to: writer)
        }
    }

    func send(_ reply: FakeReply, to writer: some ResponseWriter) {
        switch reply {
        case .http(let answer):
            let body = answer.truncated ? answer.body.prefix(answer.body.count / 2) : answer.body[...]
            writer.respond(status: answer.status, headers: answer.headers, body: body, close: answer.truncated)
        case .answer(let response):
            writer.respond(status: 200, headers: Self.json, body: response.jsonBytes()[...], close: false)
        case .serviceUnavailable:
            writer.respond(
                status: 503,
                headers: [("Content-Type", "text/html; charset=utf-8"), ("Retry-After", "1")],
                body: Self.serviceUnavailablePage,
                close: false
            )
        case .truncated(let response):
            let full = response.jsonBytes()
            writer.respond(status: 200, headers: Self.json, body: full.prefix(full.count / 2), close: true)
        case .reset:
            writer.reset()
        case .refused:
            writer.refuse()
        case .hang:
            writer.after(milliseconds: state.hangSeconds * 1_000) { writer.abandon() }
        }
    }

    private func encodeStats() -> ArraySlice<UInt8> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(state.currentStats) else { return Array("{}".utf8)[...] }
        return Array(data)[...]
    }

    private static let json = [(name: "Content-Type", value: "application/json")]
    private static let notFound = Array(#"{"error":"not found"}"#.utf8)[...]
    private static let tooLarge = Array("request body too large".utf8)[...]
    private static let serviceUnavailablePage = Array(FaultInjection.serviceUnavailablePage.utf8)[...]
}
