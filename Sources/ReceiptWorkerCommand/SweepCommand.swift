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
        discussion: "Safe to run alongside workers and other sweepers. With any --…-after-days option it also prunes "
            + "what has been kept long enough (docs/operations.md, What is kept how long); each period not given "
            + "as an option is read from its RETENTION_* variable, as work reads it."
    )

    @Option(help: "Attempts before a job is dead (MAX_ATTEMPTS). Default: 80.")
    var maxAttempts: Int?
    @Flag(help: "Keep sweeping every --interval seconds until SIGTERM/SIGINT.")
    var loop = false
    @Option(help: "Seconds between passes with --loop.")
    var interval: Double = 5
    @Option(
        help: ArgumentHelp(
            "Clear receipt_data of jobs finished more than this many days ago, the hash stays "
                + "(RETENTION_CLEAR_RECEIPTS_DAYS)."
        )
    )
    var clearReceiptsAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete finished jobs whose verdict was delivered this many days after they finished "
                + "(RETENTION_DELETE_DAYS); also the period of events, notifications and refund requests not set on "
                + "their own. Kept: the ledger, dead jobs, undelivered verdicts."
        )
    )
    var deleteAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete delivered receipt_events this many days after they were made (RETENTION_EVENTS_DAYS; "
                + "0: never). Undelivered events are kept."
        )
    )
    var deleteEventsAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete applied, duplicate and rejected notifications this many days after they finished, 180 at least "
                + "(RETENTION_NOTIFICATIONS_DAYS; 0: never). Unfinished and dead ones are kept."
        )
    )
    var deleteNotificationsAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete notifications rejected as forgeries (invalid_signature) this many days after "
                + "their rejection (RETENTION_FORGERY_DAYS). Default: 7; 0 keeps them as other rejected ones."
        )
    )
    var deleteForgeriesAfterDays: Double?
    @Option(
        help: ArgumentHelp(
            "Delete answered, skipped and failed refund requests this many days after their deadline, 180 at least, "
                + "and consumption records unchanged as long that no kept request needs "
                + "(RETENTION_REFUND_REQUESTS_DAYS; 0: never). Pending requests and consents are kept."
        )
    )
    var deleteRefundRequestsAfterDays: Double?

    private var retentionFlags: RetentionFlags {
        RetentionFlags(
            clearReceiptsAfterDays: clearReceiptsAfterDays, deleteAfterDays: deleteAfterDays,
            deleteForgeriesAfterDays: deleteForgeriesAfterDays, deleteEventsAfterDays: deleteEventsAfterDays,
            deleteNotificationsAfterDays: deleteNotificationsAfterDays,
            deleteRefundRequestsAfterDays: deleteRefundRequestsAfterDays
        )
    }

    func run() throws {
        let settings = Settings()
        let attempts = try settings.integer("MAX_ATTEMPTS", flag: maxAttempts, default: 80, minimum: 1)
        // With any retention flag, the periods not given as flags are read as `work` reads them.
        let retention = retentionFlags.anyGiven ? try settings.retention(retentionFlags) : nil
        let store = JobStore(connection: try connect(try settings.databaseURL(as: .worker)))
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
            if retentionFlags.anyGiven {
                var pruned = 0
                while let retention {
                    let count = try store.prune(retention)
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
