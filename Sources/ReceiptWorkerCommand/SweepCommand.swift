import ArgumentParser
import Foundation
import ReceiptQueue

struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "One scheduler pass, for cron: due retries back to the queue, expired leases rescued, exhausted jobs dead.",
        discussion: "Safe to run alongside workers and other sweepers. With retention options it also prunes old jobs."
    )

    @Option(help: "Attempts before a job is dead (MAX_ATTEMPTS). Default: 80.")
    var maxAttempts: Int?
    @Flag(help: "Keep sweeping every --interval seconds until SIGTERM/SIGINT.")
    var loop = false
    @Option(help: "Seconds between passes with --loop.")
    var interval: Double = 5
    @Option(help: "Clear receipt_data of jobs finished more than this many days ago (the hash stays).")
    var clearReceiptsAfterDays: Double?
    @Option(help: "Delete finished, delivered jobs older than this many days (the ledger is never pruned).")
    var deleteAfterDays: Double?

    func run() throws {
        let settings = Settings()
        let attempts = try settings.integer("MAX_ATTEMPTS", flag: maxAttempts, default: 80, minimum: 1)
        let store = JobStore(connection: try connect(try settings.databaseURL()))
        let stop = StopFlag()
        let signals = SignalHandlers([SIGTERM, SIGINT]) { _ in stop.set() }
        defer { signals.cancel() }
        repeat {
            var result = try store.sweep(maxAttempts: attempts)
            var total = result
            while result.total >= 1000 {   // a large backlog: keep going before sleeping
                result = try store.sweep(maxAttempts: attempts)
                total = JobStore.SweepResult(
                    promoted: total.promoted + result.promoted, rescued: total.rescued + result.rescued,
                    dead: total.dead + result.dead
                )
            }
            var line = "promoted \(total.promoted), rescued \(total.rescued), dead \(total.dead)"
            if clearReceiptsAfterDays != nil || deleteAfterDays != nil {
                var pruned = 0
                while true {
                    let count = try store.prune(
                        clearReceiptsAfterSeconds: (clearReceiptsAfterDays ?? 36_500) * 86_400,
                        deleteAfterSeconds: (deleteAfterDays ?? 36_500) * 86_400
                    )
                    pruned += count
                    if count == 0 || stop.isSet { break }
                }
                line += ", pruned \(pruned)"
            }
            print(line)
            if loop { stop.wait(seconds: interval) }
        } while loop && !stop.isSet
    }
}

/// Set by a signal handler, waited on by a loop.
final class StopFlag: @unchecked Sendable {
    // Safe: `stopped` is only touched while `condition` is locked.
    private let condition = NSCondition()
    private var stopped = false

    func set() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    var isSet: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    func wait(seconds: Double) {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !stopped && condition.wait(until: deadline) {}
    }
}
