import AppStoreClient
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import PostgresClient
import ReceiptQueue
import Workers

/// `receipt-worker notifications-replay --since DATE`: takes in, from Get Notification History, the notifications
/// Apple sent over a date range, so that what the receiver missed is stored as if it had been delivered.
struct NotificationsReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications-replay",
        abstract: "Store the notifications Apple sent since a date, read from Get Notification History.",
        discussion: """
            For each app in APPLE_BUNDLE_IDS (or --bundle-ids) and each environment asked, reads every page of the \
            App Store Server API's Get Notification History from --since until --until (default: now) and stores \
            each signedPayload with receive_notification(payload, 'history'); notifications already stored \
            (delivered to `receipt-worker notifications`, or replayed before) are counted as known and not added \
            again, so running it twice is harmless. Apple keeps 180 days of history. Prints pages read, \
            notifications read, new and already known. Needs DATABASE_URL (a role that may read \
            receipt_notifications, such as receipt_worker), APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and \
            APPSTORE_PRIVATE_KEY_FILE; reads APPSTORE_API_URL and APPSTORE_SANDBOX_API_URL. Exit 1 when Apple \
            cannot be read or the database fails (what was stored until then stays stored).
            """
    )

    @Option(help: "The first day or moment, ISO 8601: 2026-11-01 (midnight UTC) or 2026-11-01T12:00:00Z.")
    var since: ISODate

    @Option(help: "Before this day or moment, ISO 8601 (default: now).")
    var until: ISODate?

    @Option(help: "production, sandbox or both.")
    var environment: ReplayEnvironment = .production

    @Option(help: "Bundle ids, comma separated (APPLE_BUNDLE_IDS).")
    var bundleIds: String?

    func validate() throws {
        let end = until?.date ?? Date()
        guard since.date < end else {
            throw ValidationError("--since (\(since.text)) must be before --until (\(until?.text ?? "now"))")
        }
    }

    func run() throws {
        let settings = Settings()
        try settings.requireAll([
            { try settings.databaseURL(as: .worker) }, { try settings.requiredBundleIds(bundleIds) },
            { try Self.serverAPI(settings) },
        ])
        let apps = try settings.requiredBundleIds(bundleIds)
        let apiConfiguration = try Self.serverAPI(settings)
        let inbox = NotificationInbox(connection: try connect(try settings.databaseURL(as: .worker)))
        defer { inbox.connection.close() }
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let replay = NotificationReplay(
            client: try ServerAPIClient(configuration: apiConfiguration, transport: transport), bundleIds: apps,
            environments: environment.endpoints
        )
        let end = until?.date ?? Date()
        let range = "\(Self.format(since.date)) until \(Self.format(end))"
        do {
            let summary = try replay.run(from: since.date, until: end, into: inbox)
            print(Self.describe(summary, range: range))
        } catch {
            print(Self.describe(error.summary, range: range) + " before stopping")
            throw CommandFailure(error.message)
        }
    }

    /// The App Store Server API settings, which this command cannot do without.
    private static func serverAPI(_ settings: Settings) throws -> ServerAPIConfiguration {
        try settings.requiredServerAPIConfiguration(for: "notifications-replay", timeoutSeconds: 30)
    }

    static func describe(_ summary: NotificationReplay.Summary, range: String) -> String {
        "notification history \(range): \(summary.pages) pages, \(summary.read) notifications read, "
            + "\(summary.new) new, \(summary.known) already known, \(summary.refused) refused"
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

/// A date on the command line: ISO 8601, a day (midnight UTC) or a moment with its offset.
struct ISODate: ExpressibleByArgument {
    let date: Date
    let text: String

    init?(argument: String) {
        let formatter = ISO8601DateFormatter()
        let forms: [ISO8601DateFormatter.Options] = [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate],
        ]
        for options in forms {
            formatter.formatOptions = options
            if let date = formatter.date(from: argument) {
                self.date = date
                self.text = argument
                return
            }
        }
        return nil
    }
}

/// Which of Apple's environments a replay reads.
enum ReplayEnvironment: String, ExpressibleByArgument, CaseIterable {
    case production, sandbox, both

    var endpoints: [AppStoreEndpoint] {
        switch self {
        case .production: [.production]
        case .sandbox: [.sandbox]
        case .both: [.production, .sandbox]
        }
    }
}
