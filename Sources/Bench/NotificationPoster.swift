import Crypto
import CurlHTTP
import Dispatch
import Foundation
import PostgresClient
import ThreadSupport

/// Hands `bench --notifications`' payloads to the database as an app's server would: through
/// `receive_notification()` on one connection, or posted to the notification receiver over HTTP/1.1.
final class NotificationPoster {
    let path: NotificationsRun.Path
    private let connection: PostgresConnection?
    private let transport: CurlMultiTransport?
    private let url: String
    /// Sends per second over the last `send(_:rate:)`, first send to last acknowledgement.
    private(set) var achievedRate: Double = 0

    init(path: NotificationsRun.Path, databaseURL: String, port: Int?) throws {
        self.path = path
        switch path {
        case .sql:
            connection = try BenchConnection.open(databaseURL)
            transport = nil
            url = ""
        case .http:
            connection = nil
            do {
                transport = try CurlMultiTransport(
                    configuration: .init(maxTotalConnections: 8, maxHostConnections: 8, httpVersion: .http1_1)
                )
            } catch {
                throw BenchError("cannot start the HTTP client: \(error)")
            }
            url = "http://127.0.0.1:\(port ?? 0)/"
        }
    }

    func close() {
        connection?.close()
        transport?.shutdown()
    }

    /// Stores every payload as fast as it goes: `receive_notification()` over `batch` payloads a statement, or 64
    /// posts in flight.
    func storeAll(_ payloads: [String], batch: Int) throws {
        if let connection {
            var start = 0
            while start < payloads.count {
                let chunk = Array(payloads[start..<min(start + batch, payloads.count)])
                _ = try connection.query(
                    "SELECT receive_notification(p, 'sql') FROM unnest($1::text[]) AS p",
                    [BenchEnqueuer.arrayLiteral(chunk)]
                )
                start += chunk.count
            }
            return
        }
        let window = DispatchSemaphore(value: 64)
        let group = DispatchGroup()
        let failures = ConditionLock<[String]>([])
        for payload in payloads {
            window.wait()
            group.enter()
            post(payload) { failure in
                if let failure { failures.withLock { $0.append(failure) } }
                window.signal()
                group.leave()
            }
        }
        group.wait()
        if let first = failures.withLock({ $0.first }) {
            throw BenchError("the receiver did not store \(failures.withLock { $0.count }) notifications: \(first)")
        }
    }

    /// Sends the payloads one at a time, `rate` a second (each at its time: a late one does not shift the rest);
    /// returns when each was acknowledged (stored and committed), by its index.
    func send(_ payloads: [String], rate: Double) throws -> [Int: ContinuousClock.Instant] {
        let start = ContinuousClock.now
        let acknowledged = ConditionLock<(at: [Int: ContinuousClock.Instant], failures: [String])>(([:], []))
        let group = DispatchGroup()
        for (index, payload) in payloads.enumerated() {
            let due = start + .seconds(Double(index) / rate)
            let wait = due - ContinuousClock.now
            if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
            if let connection {
                _ = try connection.query("SELECT receive_notification($1, 'sql')", [payload])
                let now = ContinuousClock.now
                acknowledged.withLock { $0.at[index] = now }
                continue
            }
            group.enter()
            post(payload) { failure in
                let now = ContinuousClock.now
                acknowledged.withLock { state in
                    if let failure { state.failures.append(failure) } else { state.at[index] = now }
                }
                group.leave()
            }
        }
        group.wait()
        let (at, failures) = acknowledged.withLock { ($0.at, $0.failures) }
        if let first = failures.first {
            throw BenchError("the receiver did not store \(failures.count) notifications: \(first)")
        }
        let last = at.values.max() ?? start
        achievedRate = Double(payloads.count) / max((last - start).seconds, 1e-9)
        return at
    }

    /// The row `receive_notification()` keys each payload by (`payload_hash`).
    static func hash(_ payload: String) -> String {
        SHA256.hash(data: Data(payload.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private func post(_ payload: String, completion: @escaping @Sendable (String?) -> Void) {
        guard let transport else { return completion("no HTTP client") }
        let body = Array(#"{"signedPayload":""#.utf8) + Array(payload.utf8) + Array(#""}"#.utf8)
        transport.send(HTTPRequest(url: url, body: body, headers: ["Content-Type: application/json"])) { result in
            switch result {
            case .success(let response) where response.status == 200:
                completion(nil)
            case .success(let response):
                completion("HTTP \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))")
            case .failure(let error):
                completion("\(error)")
            }
        }
    }
}
