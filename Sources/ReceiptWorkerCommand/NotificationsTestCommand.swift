import AppStoreClient
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import JSONText
import PostgresClient

/// `receipt-worker notifications test`: the set-up check of the whole notification path, from Apple to a worker.
struct NotificationsTestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Have Apple send a TEST notification, and wait until it has come through the receiver and been applied.",
        discussion: """
            Asks the App Store Server API for a test notification (Request a Test Notification), which Apple sends to \
            the notifications URL App Store Connect holds for the app in --environment; then, every half second \
            until --timeout, reads Apple's side (Get Test Notification Status: its send attempts) and this \
            database's (the TEST notification stored by the receiver or receive_notification(), and applied by a \
            worker). The run is recorded in receipt_notification_tests, and `receipt-worker status` shows when the \
            check last passed and last failed. Exit status: 0 the whole path works; 5 Apple refused the request \
            (the key, key id, issuer id or app; or no notifications URL for this environment in App Store Connect); \
            6 Apple could not deliver it to the URL (its send result, such as NO_RESPONSE or TLS_ISSUE, is named), \
            or reported no attempt in time; 7 Apple delivered it, but not to this deployment (this database never \
            stored it); 8 the receiver stored it but no worker applied it in time (or a worker rejected it, with \
            the reason); 1 Apple did not answer (5xx, 429, no connection: 3 attempts) or the database failed; 2 \
            configuration. Needs APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, APPSTORE_PRIVATE_KEY_FILE (and \
            APPSTORE_API_URL, APPSTORE_SANDBOX_API_URL) and DATABASE_URL (the owner, or receipt_operator).
            """
    )

    @Option(help: "Production or Sandbox: the environment whose notifications URL is tested (default: Production).")
    var environment: String?
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?
    @Option(help: "Seconds to wait for the notification to be delivered and applied (default: 60).")
    var timeout: Double = 60
    @Flag(help: "Print one JSON object instead of lines.")
    var json = false

    func run() throws {
        let pinned: AppStoreEndpoint
        switch environment?.lowercased() {
        case nil, "production": pinned = .production
        case "sandbox": pinned = .sandbox
        case let other?:
            throw ConfigurationError(.invalid, "--environment must be Production or Sandbox, got \"\(other)\"")
        }
        guard timeout.isFinite, timeout >= 1, timeout <= 3600 else {
            throw ConfigurationError(.outOfRange, "--timeout must be 1 to 3600 seconds, got \(timeout)")
        }
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "notifications test")
        let app = try settings.singleBundleId(bundleId)
        let connection = try connect(try settings.databaseURL(as: .operator))
        defer { connection.close() }
        try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        let startedAt = try connection.query("SELECT now()::text AS now")[0, "now"] ?? ""

        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let client = try ServerAPIClient(configuration: apiConfiguration, transport: transport)
        let check = NotificationSetupCheck(
            client: client, bundleId: app, environment: pinned, timeoutSeconds: timeout,
            lookup: { payload in try Self.lookUp(payload, on: connection) }
        )
        let report: NotificationSetupCheck.Report
        do {
            report = try check.run()
        } catch {
            throw CommandFailure("the database could not be read: \(SetAccountTokenCommand.describe(error))")
        }
        do {
            _ = try connection.query(
                "SELECT receipt_notification_test_record($1, $2, $3, $4::timestamptz, $5, $6, $7::bigint, $8)",
                [
                    report.environment, report.bundleId, report.testNotificationToken, startedAt,
                    report.result.rawValue, report.sendAttemptResult, report.notificationId.map(String.init),
                    report.detail,
                ]
            )
        } catch {
            let message = TerminalText.message(SetAccountTokenCommand.describe(error))
            FileHandle.standardError.write(Data("warning: the result could not be recorded: \(message)\n".utf8))
        }
        print(json ? try JSONOutput.line(report, snakeCaseKeys: true) : Self.text(report))
        if report.result != .passed { throw ExitCode(report.result.exitStatus) }
    }

    static func lookUp(_ payload: String, on connection: PostgresConnection) throws
        -> NotificationSetupCheck.StoredNotification?
    {
        let rows = try connection.query(
            "SELECT id, state, reason, last_error FROM receipt_notification_test_lookup($1)", [payload]
        )
        guard !rows.isEmpty, let id = rows.int64(0, "id") else { return nil }
        return NotificationSetupCheck.StoredNotification(
            id: id, state: rows[0, "state"] ?? "", reason: rows[0, "reason"], lastError: rows[0, "last_error"]
        )
    }

    static func text(_ report: NotificationSetupCheck.Report) -> String {
        let verdict = report.result == .passed ? "passed" : "FAILED at \(report.result.rawValue)"
        var lines = [
            "notifications test \(verdict) (\(report.bundleId), \(report.environment), \(report.seconds) s)",
            report.detail,
        ]
        if let token = report.testNotificationToken { lines.append("test notification token: \(token)") }
        if let result = report.sendAttemptResult { lines.append("Apple's send result: \(result)") }
        if let id = report.notificationId {
            lines.append("notification \(id): \(report.notificationState ?? "?")"
                + (report.notificationReason.map { " (\($0))" } ?? ""))
        }
        return lines.map { TerminalText.escaped($0) }.joined(separator: "\n")
    }
}
