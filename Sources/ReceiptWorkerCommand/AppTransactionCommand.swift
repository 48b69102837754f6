import AppStoreClient
import AppStoreSignedData
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import JSONText

/// `receipt-worker app-transaction --transaction-id ID`: Apple's Get App Transaction Info for a customer, verified.
struct AppTransactionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app-transaction",
        abstract: "Print a customer's app transaction (their original download of the app), verified, from Apple.",
        discussion: """
            Asks the App Store Server API (Get App Transaction Info; production, then the sandbox once, or \
            --environment only) for the app transaction of the customer who owns --transaction-id (any transaction \
            id, original transaction id or appTransactionId of theirs), verifies it as the workers verify \
            enqueue_app_transaction()'s (signature, chain, app, environment) and prints it: appTransactionId, \
            original application version and purchase date, original platform. Needs APPSTORE_KEY_ID, \
            APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE; reads APPSTORE_API_URL, APPSTORE_SANDBOX_API_URL, \
            APPSTORE_ROOT_CERTIFICATES, APPSTORE_ONLINE_CHECKS and APPLE_BUNDLE_IDS. Exit 0 printed, 3 Apple knows \
            no such id or the customer has no app transaction, 1 Apple refused or could not be asked, or what it \
            sent did not verify, 2 bad input.
            """
    )

    @Option(help: "Any transaction id, original transaction id or appTransactionId of the customer (digits).")
    var transactionId: String?
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?
    @Option(help: "Production or Sandbox: ask that environment only (default: production, then the sandbox).")
    var environment: String?
    @Flag(help: "Print one JSON object instead of lines.")
    var json = false

    /// Exit status when Apple knows no such id, or the customer has no app transaction.
    static let notFound: Int32 = 3

    func run() throws {
        guard let transactionId, !transactionId.isEmpty else {
            throw ConfigurationError(.missing, "give --transaction-id (digits)")
        }
        guard transactionId.utf8.count <= 32,
            transactionId.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            throw ConfigurationError(
                .invalid, "--transaction-id takes Apple's id (1 to 32 digits), got \"\(transactionId)\""
            )
        }
        let pinned: AppStoreEndpoint?
        switch environment?.lowercased() {
        case nil: pinned = nil
        case "production": pinned = .production
        case "sandbox": pinned = .sandbox
        case let other?:
            throw ConfigurationError(.invalid, "--environment must be Production or Sandbox, got \"\(other)\"")
        }
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "app-transaction")
        let app = try settings.singleBundleId(bundleId)
        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let client = try ServerAPIClient(configuration: apiConfiguration, transport: transport)
        let verifier = try settings.signedDataVerifier(transport: transport)
        let (result, _) = client.appTransactionInfo(transactionId: transactionId, bundleId: app, environment: pinned)
        let signed: String
        switch result {
        case .success(let value, _):
            signed = value
        case .notFound(let failure):
            FileHandle.standardError.write(
                Data("Get App Transaction Info \(transactionId): \(TerminalText.message(failure.message))\n".utf8)
            )
            throw ExitCode(Self.notFound)
        case .rejected(let failure), .configurationError(let failure), .retryable(let failure):
            throw CommandFailure("Get App Transaction Info \(transactionId): \(failure.message)")
        }
        let transaction: SignedAppTransaction
        do {
            transaction = try verifier.verifyAppTransaction(signed)
        } catch {
            throw CommandFailure("Apple's app transaction did not verify: \(error.message)")
        }
        guard transaction.bundleId == app else {
            throw CommandFailure("Apple's app transaction is for \(transaction.bundleId ?? "no app"), not \(app)")
        }
        let report = Report(transaction)
        print(json ? try JSONOutput.line(report, snakeCaseKeys: true) : report.text)
    }

    /// What is printed.
    struct Report: Encodable {
        var appTransactionId: String?
        var bundleId: String?
        var environment: String?
        var originalApplicationVersion: String?
        var originalPurchaseDate: String?
        var originalPlatform: String?
        var applicationVersion: String?
        var preorderDate: String?
        var receiptCreationDate: String?

        init(_ app: SignedAppTransaction) {
            appTransactionId = app.appTransactionId
            bundleId = app.bundleId
            environment = app.receiptType
            originalApplicationVersion = app.originalApplicationVersion
            originalPurchaseDate = app.originalPurchaseDateMs.map(Self.iso8601)
            originalPlatform = app.originalPlatform
            applicationVersion = app.applicationVersion
            preorderDate = app.preorderDateMs.map(Self.iso8601)
            receiptCreationDate = app.receiptCreationDateMs.map(Self.iso8601)
        }

        static func iso8601(_ milliseconds: Int64) -> String {
            Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
        }

        var text: String {
            [
                "app transaction \(appTransactionId ?? "-") of \(bundleId ?? "-") (\(environment ?? "-"))",
                "original application version: \(originalApplicationVersion ?? "-")",
                "original purchase date: \(originalPurchaseDate ?? "-")",
                "original platform: \(originalPlatform ?? "-")",
                "application version: \(applicationVersion ?? "-")",
                "preorder date: \(preorderDate ?? "-")",
            ].map { TerminalText.escaped($0) }.joined(separator: "\n")
        }
    }
}
