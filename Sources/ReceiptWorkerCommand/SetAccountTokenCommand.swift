import AppStoreClient
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import CustomerSupport
import Foundation
import JSONText
import PostgresClient

/// `receipt-worker set-account-token`: Apple's Set App Account Token for a purchase that carries no token (an offer
/// code redeemed in the App Store), and with `--user-id` the purchase claimed for that customer here.
struct SetAccountTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-account-token",
        abstract: "Give a purchase chain an appAccountToken at Apple (Set App Account Token), and claim it locally.",
        discussion: """
            Asks the App Store Server API to set (or replace) the appAccountToken of the purchase chain \
            --original-transaction-id (production, then the sandbox when production does not know it; \
            --environment asks one only), so that Apple names the token in the chain's transactions and \
            notifications from now on. Apple's "try again" answers (429, 5xx, no connection) are tried again, 3 \
            attempts in all. With --user-id, afterwards, in one transaction: register_account_token(user, token, \
            bundle) (credits what waited under that token), then every purchase of the chain kept unclaimed with no \
            token is claimed for \
            the customer (claim_purchase(), order apple:<transactionId>); one kept under another token is listed, \
            not claimed. Before Apple is asked, the registration is tried and rolled back, so a token of another \
            customer or an unknown app stops the command with Apple unchanged. Needs APPSTORE_KEY_ID, \
            APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE (and APPSTORE_API_URL, APPSTORE_SANDBOX_API_URL), and \
            with --user-id DATABASE_URL (the owner, or receipt_operator). Exit 0 done, 2 bad input (a flag missing, \
            an id that is not digits, a token that is not a UUID), 1 Apple refused or could not be reached, or the \
            database refused (the message says whether Apple's token was set).
            """
    )

    @Option(help: "The purchase chain: its original transaction id (digits).")
    var originalTransactionId: String?
    @Option(help: "The token to set: a UUID, e.g. the customer's own (register_account_token).")
    var appAccountToken: String?
    @Option(help: "Register the token to this customer and claim the chain's token-less unclaimed purchases for them.")
    var userId: String?
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one); with --user-id it also limits a token registered now to this app.")
    var bundleId: String?
    @Option(help: "Production or Sandbox: ask that environment only (default: production, then the sandbox).")
    var environment: String?
    @Flag(help: "Print one JSON object instead of lines.")
    var json = false

    /// Attempts at most for Apple's "try again" answers.
    static let attempts = 3

    func run() throws {
        let (id, token, pinned) = try checkedInput()
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "set-account-token")
        let app = try settings.singleBundleId(bundleId)
        // The database first: a refusal there must come before Apple's data changes.
        var claim: AccountTokenClaim?
        var connection: PostgresConnection?
        defer { connection?.close() }
        if let userId {
            let opened = try connect(try settings.databaseURL(as: .operator))
            connection = opened
            try DatabaseCheck.requireSchema(opened, environment: settings.environment)
            let local = AccountTokenClaim(connection: opened)
            do {
                try local.check(user: userId, token: token, bundleId: bundleId)
            } catch {
                throw CommandFailure(
                    "the token cannot be registered to \(userId), so Apple was not asked: \(Self.describe(error))"
                )
            }
            claim = local
        }

        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let client = try ServerAPIClient(configuration: apiConfiguration, transport: transport)
        let answered = try Self.setAtApple(client, id: id, token: token, app: app, environment: pinned)
        let environmentName = answered == .production ? "Production" : "Sandbox"

        var report = Report(
            originalTransactionId: id, appAccountToken: token, bundleId: app, environment: environmentName,
            userId: userId, local: nil
        )
        if let claim, let userId {
            do {
                report.local = try claim.claim(
                    user: userId, token: token, bundleId: bundleId, originalTransactionId: id,
                    environment: environmentName
                )
            } catch {
                throw CommandFailure(
                    "Apple set the token of \(id) (\(environmentName)), but the local claim for \(userId) was refused, "
                        + "nothing changed here: \(Self.describe(error)). Run the command again once fixed (setting "
                        + "the same token again changes nothing at Apple)"
                )
            }
        }
        print(json ? try JSONOutput.line(report, snakeCaseKeys: true) : report.text)
    }

    /// The flags, checked: a missing or malformed one is a configuration error (exit 2).
    private func checkedInput() throws -> (id: String, token: String, environment: AppStoreEndpoint?) {
        guard let originalTransactionId, !originalTransactionId.isEmpty else {
            throw ConfigurationError(.missing, "give --original-transaction-id (the purchase chain's, digits)")
        }
        guard originalTransactionId.utf8.count <= 32,
            originalTransactionId.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            throw ConfigurationError(
                .invalid, "--original-transaction-id takes Apple's id (1 to 32 digits), got \"\(originalTransactionId)\""
            )
        }
        guard let appAccountToken, !appAccountToken.isEmpty else {
            throw ConfigurationError(.missing, "give --app-account-token (a UUID)")
        }
        guard let uuid = UUID(uuidString: appAccountToken) else {
            throw ConfigurationError(
                .invalid, "--app-account-token must be a UUID (8-4-4-4-12 hex digits), got \"\(appAccountToken)\""
            )
        }
        if let userId, userId.isEmpty || userId.utf8.count > 1000 {
            throw ConfigurationError(.invalid, "--user-id needs a value of 1 to 1000 bytes")
        }
        let pinned: AppStoreEndpoint?
        switch environment?.lowercased() {
        case nil: pinned = nil
        case "production": pinned = .production
        case "sandbox": pinned = .sandbox
        case let other?:
            throw ConfigurationError(.invalid, "--environment must be Production or Sandbox, got \"\(other)\"")
        }
        return (originalTransactionId, uuid.uuidString.lowercased(), pinned)
    }

    /// Apple's Set App Account Token, its "try again" answers retried; the environment that took it.
    static func setAtApple(
        _ client: ServerAPIClient, id: String, token: String, app: String, environment: AppStoreEndpoint?
    ) throws -> AppStoreEndpoint {
        let result = AppleCallRetry.retrying(attempts: attempts) {
            client.setAppAccountToken(
                originalTransactionId: id, appAccountToken: token, bundleId: app, environment: environment
            ).0
        }
        switch result {
        case .success(_, let answered):
            return answered
        case .notFound(let failure):
            throw CommandFailure("Set App Account Token \(id): Apple does not know this purchase: \(failure.message)")
        case .rejected(let failure):
            throw CommandFailure("Set App Account Token \(id): Apple refused it: \(failure.message)")
        case .configurationError(let failure):
            throw CommandFailure("Set App Account Token \(id): our configuration: \(failure.message)")
        case .retryable(let failure):
            throw CommandFailure(
                "Set App Account Token \(id): no answer after \(attempts) attempts: \(failure.message)"
            )
        }
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PostgresError else { return String(describing: error) }
        return error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }

    /// What was done, for the terminal or as JSON.
    struct Report: Encodable {
        var originalTransactionId: String
        var appAccountToken: String
        var bundleId: String
        var environment: String
        var userId: String?
        var local: AccountTokenClaim.Outcome?

        var text: String {
            var lines = ["Apple: appAccountToken \(appAccountToken) set on \(originalTransactionId) of \(bundleId) "
                + "(\(environment))"]
            if let userId, let local {
                lines.append("registered to \(userId); purchases it credited: \(local.creditedByToken)")
                for claimed in local.claimed {
                    lines.append("claimed \(claimed.transactionId) for \(userId): job \(claimed.jobId)")
                }
                for left in local.leftUnclaimed {
                    lines.append(
                        "left unclaimed \(left.transactionId): it carries another appAccountToken "
                            + "(\(left.appAccountToken)); claim_purchase() it if it is \(userId)'s"
                    )
                }
            }
            return lines.map { TerminalText.escaped($0) }.joined(separator: "\n")
        }
    }
}
