import ArgumentParser
import ConsoleOutput
import Foundation
import ReceiptQueue
import ThreadSupport
import Workers

struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "One scheduler pass, for cron: due retries back to the queue, expired leases rescued, exhausted jobs dead.",
        discussion: "Safe to run alongside workers and other sweepers. With retention options it also prunes old jobs, "
            + "and notifications rejected as forgeries 7 days after their rejection."
    )

    @Option(help: "Attempts before a job is dead (MAX_ATTEMPTS). Default: 80.")
    var maxAttempts: Int?
    @Flag(help: "Keep sweeping every --interval seconds until SIGTERM/SIGINT.")
    var loop = false
    @Option(help: "Seconds between passes with --loop.")
    var interval: Double = 5
    @Option(help: "Clear receipt_data of jobs finished more than this many days ago (the hash stays).")
    var clearReceiptsAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete finished jobs whose verdict was delivered, and delivered receipt_events, this many days after "
                + "they finished (RETENTION_DELETE_DAYS for work); finished notifications after this or 180 days, "
                + "whichever is longer. Kept: the ledger, dead jobs and notifications, undelivered verdicts and events."
        )
    )
    var deleteAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "With retention: delete notifications rejected as forgeries (invalid_signature) this many days after "
                + "their rejection (RETENTION_FORGERY_DAYS). Default: 7; 0 keeps them as other rejected ones."
        )
    )
    var deleteForgeriesAfterDays: Double?

    func run() throws {
        let settings = Settings()
        let attempts = try settings.integer("MAX_ATTEMPTS", flag: maxAttempts, default: 80, minimum: 1)
        let forgeryDays = try settings.number(
            "RETENTION_FORGERY_DAYS", flag: deleteForgeriesAfterDays, default: Retention.forgeryDays
        )
        let store = JobStore(connection: try connect(try settings.databaseURL()))
        try DatabaseCheck.requireSchema(store.connection, environment: settings.environment)
        let stopRequested = ConditionLock(false)
        let signals = try SignalHandlers([SIGTERM, SIGINT]) { _ in stopRequested.withLock { $0 = true } }
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
            if clearReceiptsAfterDays != nil || deleteAfterDays != nil || deleteForgeriesAfterDays != nil {
                let retention = Retention(
                    clearReceiptsAfterDays: clearReceiptsAfterDays, deleteAfterDays: deleteAfterDays,
                    deleteForgeriesAfterDays: forgeryDays > 0 ? forgeryDays : nil
                )
                var pruned = 0
                while true {
                    let count = try store.prune(
                        clearReceiptsAfterSeconds: retention.clearReceiptsAfterSeconds,
                        deleteAfterSeconds: retention.deleteAfterSeconds,
                        deleteForgeriesAfterSeconds: retention.deleteForgeriesAfterSeconds
                    )
                    pruned += count
                    if count == 0 || stopRequested.withLock({ $0 }) { break }
                }
                line += ", pruned \(pruned)"
            }
            print(line)
            flushStandardOutput()  // each pass's line as it happens, also into a pipe or a journal
            if loop { stopRequested.wait(until: { $0 }, timeout: .seconds(interval)) }
        } while loop && !stopRequested.withLock { $0 }
    }
}
