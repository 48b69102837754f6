import Foundation
import PostgresClient
import ThreadSupport

/// `bench --soak`'s notifications: stored one at a time through `receive_notification()` at a steady rate, signed
/// just before (DID_RENEW and ONE_TIME_CHARGE in turn, as `bench --notifications` makes them), and watched until
/// final by a reader that asks every 10 ms about the ones still open (a handful), so its work does not grow with
/// the table. Per interval: arrival (stored, committed) → first seen final.
final class SoakNotifications: Sendable {
    struct Interval {
        var sent = 0
        var final = 0
        var applied = 0
        /// Arrival → seen final, µs.
        var latencies: [Int64] = []
    }

    private struct State {
        /// Stored and not yet seen final: when each was acknowledged, by notification id.
        var open: [Int64: ContinuousClock.Instant] = [:]
        var interval = Interval()
        var sent = 0
        var stopping = false
        /// The sender has stopped: no notification will be added to `open`.
        var senderDone = false
        var error: String?
    }

    private let databaseURL: String
    private let renewals: NotificationPayloads
    private let charges: NotificationPayloads
    private let state = ConditionLock(State())
    private let threads = ConditionLock<(sender: DedicatedThread?, watcher: DedicatedThread?)>((nil, nil))

    init(databaseURL: String, renewals: NotificationPayloads, charges: NotificationPayloads) {
        self.databaseURL = databaseURL
        self.renewals = renewals
        self.charges = charges
    }

    /// The payload of notification `index`: even ones renew subscription `index / 2`, odd ones announce charge
    /// `index / 2`.
    func payload(_ index: Int) throws -> String {
        index % 2 == 0 ? try renewals.signed(index / 2) : try charges.signed(index / 2)
    }

    /// Starts sending `rate` a second from `start` until `stop()`, and watching.
    func start(rate: Double, from start: ContinuousClock.Instant) throws {
        let sender = try DedicatedThread.start(name: "soak-notify") { [self] in
            guard rate > 0 else { return }
            run("sending") { connection in
                var index = 0
                while !state.withLock({ $0.stopping }) {
                    let due = start + .seconds(Double(index) / rate)
                    let wait = due - ContinuousClock.now
                    if wait > .zero {
                        Thread.sleep(forTimeInterval: wait.seconds)
                        continue
                    }
                    let signed = try payload(index)
                    let id = try connection.query("SELECT receive_notification($1, 'sql') AS id", [signed])
                        .int64(0, "id")
                    let acknowledged = ContinuousClock.now
                    state.withLock { state in
                        state.interval.sent += 1
                        state.sent += 1
                        if let id { state.open[id] = acknowledged }
                    }
                    index += 1
                }
            }
        }
        let watcher = try DedicatedThread.start(name: "soak-watch") { [self] in
            run("watching") { connection in
                while !state.withLock({ $0.senderDone && $0.open.isEmpty }) {
                    let open = state.withLock { Array($0.open.keys) }
                    if !open.isEmpty {
                        let rows = try connection.query(
                            """
                            SELECT id, state FROM receipt_notifications
                            WHERE id = ANY($1::bigint[]) AND state NOT IN ('queued', 'running', 'retry')
                            """,
                            ["{" + open.map(String.init).joined(separator: ",") + "}"]
                        )
                        let now = ContinuousClock.now
                        state.withLock { state in
                            for row in rows.rows.indices {
                                guard let id = rows.int64(row, "id"), let arrived = state.open.removeValue(forKey: id)
                                else { continue }
                                state.interval.final += 1
                                if rows[row, "state"] == "applied" { state.interval.applied += 1 }
                                state.interval.latencies.append(Int64((now - arrived).seconds * 1e6))
                            }
                        }
                    }
                    Thread.sleep(forTimeInterval: 0.01)
                }
            }
        }
        threads.withLock { $0 = (sender, watcher) }
    }

    /// Runs `body` on a connection of its own; a failure ends the run (`error`).
    private func run(_ what: String, _ body: (PostgresConnection) throws -> Void) {
        do {
            let connection = try BenchConnection.open(databaseURL)
            defer { connection.close() }
            try body(connection)
        } catch {
            state.withLock { state in
                state.error = "notifications: \(what): \(error)"
                state.stopping = true
                state.senderDone = true
                state.open.removeAll()
            }
        }
    }

    func takeInterval() -> Interval {
        state.withLock { state in
            defer { state.interval = Interval() }
            return state.interval
        }
    }

    /// Stops sending and waits for the sender; idempotent. The watcher goes on.
    func stopSending() {
        state.withLock { $0.stopping = true }
        let sender = threads.withLock { threads in
            defer { threads.sender = nil }
            return threads.sender
        }
        sender?.join()
        state.withLock { $0.senderDone = true }
    }

    /// Stops sending; the watcher goes on until every one sent was seen final, or `deadline`. Returns whether they
    /// all were. Idempotent.
    func stop(waitingUntil deadline: ContinuousClock.Instant) -> Bool {
        stopSending()
        let done = state.wait(until: { $0.open.isEmpty }, timeout: max(.zero, deadline - ContinuousClock.now))
        if !done { state.withLock { $0.open.removeAll() } }
        let watcher = threads.withLock { threads in
            defer { threads.watcher = nil }
            return threads.watcher
        }
        watcher?.join()
        return done
    }

    var sent: Int { state.withLock { $0.sent } }
    var openCount: Int { state.withLock { $0.open.count } }
    /// Why sending or watching stopped early, if it did.
    var error: String? { state.withLock { $0.error } }
}
