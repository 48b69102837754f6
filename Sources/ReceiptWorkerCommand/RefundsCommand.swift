import AppStoreClient
import AppStoreSignedData
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import JSONText
import ReceiptQueue
import Workers

/// `receipt-worker refunds`: Get Refund History v2 for one customer (`--transaction-id`) or for every chain credited
/// since a day (`--all-credited-since`), each refunded transaction verified; with `--apply`, the refunds the ledger
/// lacks applied as their REFUND notification would have been.
struct RefundsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refunds",
        abstract: "List a customer's refunds from Apple (Get Refund History) and apply those the ledger missed.",
        discussion: """
            Asks the App Store Server API (Get Refund History v2, every page) for the refunded transactions of the \
            customer who owns --transaction-id (production, then the sandbox once), verifies each as the workers do, \
            and prints them. A transaction of another app or environment than the one asked about is listed as \
            foreign and never applied. With --apply, each refund of ours that the ledger lacks is applied as its \
            REFUND notification would have been (the credit revoked, the `revoked` event, the revenue's refunded \
            share; receipt_refund_recover()); one the ledger has changes nothing, so running it twice is safe. \
            --all-credited-since DAY sweeps instead: one lookup per purchase chain credited since DAY (at most \
            --limit), paced under Apple's limit (10 a second, the sandbox 1), and prints the counts. Needs \
            APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, APPSTORE_PRIVATE_KEY_FILE and APPLE_BUNDLE_IDS; DATABASE_URL with \
            --apply or --all-credited-since.

            Exit status: 0 done (every refund listed, or applied or already known); 1 Apple could not be asked, a \
            signed transaction did not verify, or (sweep) a chain's refunds could not be read; 2 configuration; 3 \
            Apple does not know the transaction id.
            """
    )

    @Option(help: "Any transaction id of the customer (an original one too).")
    var transactionId: String?
    @Option(help: "Sweep: every purchase chain credited since this day (YYYY-MM-DD, UTC) or time (RFC 3339).")
    var allCreditedSince: String?
    @Flag(help: "Apply the refunds the ledger lacks (as their REFUND notification would have been).")
    var apply = false
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?
    @Option(help: "production or sandbox: ask that environment only (default: production, then the sandbox).")
    var environment: String?
    @Option(help: "Sweep: purchase chains asked about at most.")
    var limit: Int = 10_000
    @Flag(help: "Print one JSON object instead of lines.")
    var json = false

    /// Exit status when Apple does not know the transaction id.
    static let notFound: Int32 = 3

    func validate() throws {
        guard (transactionId == nil) != (allCreditedSince == nil) else {
            throw ValidationError("give --transaction-id or --all-credited-since, one of them")
        }
        if let transactionId, transactionId.isEmpty || !transactionId.utf8.allSatisfy({ (48...57).contains($0) }) {
            throw ValidationError("--transaction-id is Apple's transaction id, digits only, got \"\(transactionId)\"")
        }
        if let environment, !["production", "sandbox"].contains(environment) {
            throw ValidationError("--environment is production or sandbox, got \"\(environment)\"")
        }
        if allCreditedSince != nil, bundleId != nil || environment != nil {
            throw ValidationError(
                "--all-credited-since asks each chain's own app and environment: drop --bundle-id and --environment"
            )
        }
        guard (1...1_000_000).contains(limit) else {
            throw ValidationError("--limit must be 1 to 1000000, got \(limit)")
        }
    }

    func run() throws {
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "refunds")
        let ours = Set(try settings.bundleIds(nil))
        guard !ours.isEmpty else {
            throw ConfigurationError(.missing, "refunds needs APPLE_BUNDLE_IDS: the apps whose refunds may be applied")
        }
        var since: Date?
        if let allCreditedSince {
            guard let date = Self.date(allCreditedSince) else {
                throw ConfigurationError(
                    .invalid,
                    "--all-credited-since must be a day (YYYY-MM-DD) or an RFC 3339 time, got \"\(allCreditedSince)\""
                )
            }
            since = date
        }
        let connection = try (apply || since != nil) ? connect(try settings.databaseURL(as: .worker)) : nil
        defer { connection?.close() }
        if let connection { _ = try DatabaseCheck.requireSchema(connection, environment: settings.environment) }
        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let recovery = RefundRecovery(
            client: try ServerAPIClient(configuration: apiConfiguration, transport: transport),
            verifier: try settings.signedDataVerifier(transport: transport), bundleIds: ours
        )
        if let since, let connection {
            let sweep = try recovery.sweep(since: since, limit: limit, apply: apply, connection)
            print(json ? try JSONOutput.line(SweepReport(sweep), snakeCaseKeys: true) : SweepReport(sweep).text)
            if sweep.failed > 0 {
                throw CommandFailure(
                    "\(sweep.failed) of \(sweep.asked) purchase chains' refunds not read (see the log)"
                )
            }
            return
        }
        guard let transactionId else { return }
        let app = try bundleId ?? settings.singleBundleId(nil)
        let endpoint = environment.map { $0 == "production" ? AppStoreEndpoint.production : .sandbox }
        var lookup: RefundRecovery.Lookup
        switch recovery.lookUp(transactionId: transactionId, bundleId: app, environment: endpoint) {
        case .failure(let error) where error.notFound:
            FileHandle.standardError.write(Data("Error: \(TerminalText.message(error.message))\n".utf8))
            throw ExitCode(Self.notFound)
        case .failure(let error):
            throw CommandFailure(error.message)
        case .success(let found):
            lookup = found
        }
        if apply, let connection { try recovery.apply(&lookup, connection) }
        let report = LookupReport(transactionId: transactionId, bundleId: app, lookup: lookup, applied: apply)
        print(json ? try JSONOutput.line(report, snakeCaseKeys: true) : report.text)
        if !lookup.unverified.isEmpty {
            throw CommandFailure(
                "\(lookup.unverified.count) signed transactions did not verify: none of them applied"
            )
        }
    }

    /// A day (UTC midnight) or an RFC 3339 time.
    static func date(_ text: String) -> Date? {
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(identifier: "UTC")
        day.dateFormat = "yyyy-MM-dd"
        if text.count == 10, let date = day.date(from: text) { return date }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
