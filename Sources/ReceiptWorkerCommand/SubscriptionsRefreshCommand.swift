import AppStoreClient
import ArgumentParser
import CurlHTTP
import Foundation
import Logging
import ReceiptQueue
import Workers

/// `receipt-worker subscriptions-refresh`: Get All Subscription Statuses for the chosen purchase chains, every signed
/// item verified, applied as a notification would be (repairs what a missed notification left out).
struct SubscriptionsRefreshCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions-refresh",
        abstract: "Ask Apple for the status of subscriptions and apply it, as a notification would be.",
        discussion: """
            Asks the App Store Server API (Get All Subscription Statuses) about each chosen purchase chain, verifies \
            every signed transaction and renewal info it returns as the workers do, and applies them to \
            receipt_subscriptions and the ledger (receipt_subscription_refresh()): a renewal or an expiry whose \
            notification never arrived is repaired; what Apple signed before the newest data applied changes \
            nothing. Without options: every chain whose period ended with no renewal and no expiry seen (as `work` \
            does by itself every SUBSCRIPTIONS_REFRESH_MINUTES). Needs APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and \
            APPSTORE_PRIVATE_KEY_FILE, and DATABASE_URL. Exit 1 when a chain could not be refreshed.
            """
    )

    @Option(help: "Only this user's chains (their user_id).")
    var user: String?
    @Option(help: "Only this purchase chain.")
    var originalTransactionId: String?
    @Option(help: "Only chains whose period ended at least N hours ago with no renewal and no expiry seen. Default: 0 without --user and --original-transaction-id, else any state.")
    var staleHours: Double?
    @Option(help: "Chains asked about at most.")
    var limit: Int = 1000

    func validate() throws {
        if let staleHours, !(staleHours >= 0 && staleHours.isFinite) {
            throw ValidationError("--stale-hours must be 0 or more hours, got \(staleHours)")
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, got \(limit)") }
        for (name, value) in [("--user", user), ("--original-transaction-id", originalTransactionId)] {
            if let value, value.isEmpty { throw ValidationError("\(name) needs a value, got an empty one") }
        }
    }

    func run() throws {
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "subscriptions-refresh")
        let connection = try connect(try settings.databaseURL(as: .worker))
        _ = try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let refresh = SubscriptionRefresh(
            client: try ServerAPIClient(configuration: apiConfiguration, transport: transport),
            verifier: try settings.signedDataVerifier(transport: transport)
        )
        let selection = SubscriptionRefresh.Selection(
            userId: user, originalTransactionId: originalTransactionId,
            staleHours: staleHours ?? (user == nil && originalTransactionId == nil ? 0 : nil), limit: limit
        )
        let pass = try refresh.runOnce(selection, connection)
        print("asked \(pass.asked), applied \(pass.applied), unchanged \(pass.unchanged), failed \(pass.failed)")
        if pass.failed > 0 {
            throw CommandFailure("\(pass.failed) of \(pass.asked) chains not refreshed (see the log)")
        }
    }
}
