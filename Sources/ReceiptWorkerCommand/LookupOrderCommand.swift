import AppStoreClient
import AppStoreSignedData
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation

/// `receipt-worker lookup-order ORDER_ID`: for support staff, the transactions of the order id on a customer's
/// e-mailed App Store receipt, each verified, from the App Store Server API's Look Up Order ID.
struct LookupOrderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup-order",
        abstract: "Print the verified transactions of an order id from a customer's App Store receipt e-mail.",
        discussion: """
            Asks the App Store Server API (Look Up Order ID; production, then the sandbox once), verifies every \
            signed transaction it returns as the workers do, and prints them. Needs APPSTORE_KEY_ID, \
            APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE; reads APPSTORE_API_URL, APPSTORE_SANDBOX_API_URL, \
            APPSTORE_ROOT_CERTIFICATES, APPSTORE_ONLINE_CHECKS and APPLE_BUNDLE_IDS. A transaction that does not \
            verify, or whose app is not in APPLE_BUNDLE_IDS (or --bundle-id when it is not set), is left out and \
            named. Exit 1 when Apple does not know the order id or cannot be asked, 5 when a transaction was left \
            out.
            """
    )

    @Argument(help: "The order id on the customer's e-mailed receipt (e.g. MK5TTTVWJH).")
    var orderId: String
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?

    /// Exit status when Apple answered but a transaction was left out: not verified, or of an app not ours.
    static let leftOutStatus: Int32 = 5

    func run() throws {
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "lookup-order")
        let app = try settings.singleBundleId(bundleId)
        // Our apps: APPLE_BUNDLE_IDS, or when it is not set, the one --bundle-id names.
        let configured = try settings.bundleIds(nil)
        let ours = Set(configured.isEmpty ? [app] : configured)
        guard ours.contains(app) else {
            throw ConfigurationError(
                .invalid, "--bundle-id \(app) is not one of APPLE_BUNDLE_IDS (\(configured.joined(separator: ", ")))"
            )
        }
        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let client = try ServerAPIClient(configuration: apiConfiguration, transport: transport)
        let verifier = try settings.signedDataVerifier(transport: transport)
        let (result, _) = client.lookUpOrder(orderId: orderId, bundleId: app)
        guard case .success(let signed, let environment) = result else {
            throw CommandFailure("Look Up Order ID \(orderId): \(result.failure?.message ?? "no answer")")
        }
        var rows: [[String]] = []
        var leftOut: [String] = []
        for jws in signed {
            let transaction: SignedTransaction
            do {
                transaction = try SignedTransaction.verified(jws, by: verifier)
            } catch {
                leftOut.append("a transaction not verified (\(error.message))")
                continue
            }
            // Apple's signature says only that the App Store made it: whose app it is, is ours to check.
            guard let bundle = transaction.bundleId, ours.contains(bundle) else {
                leftOut.append(
                    "transaction \(transaction.transactionId ?? "?") of \(transaction.bundleId ?? "no app"), "
                        + "not one of our apps (APPLE_BUNDLE_IDS)"
                )
                continue
            }
            rows.append([
                transaction.transactionId ?? "-", transaction.originalTransactionId ?? "-",
                transaction.productId ?? "-", transaction.type ?? "-", Self.date(transaction.purchaseDateMs),
                Self.date(transaction.expiresDateMs), Self.date(transaction.revocationDateMs),
                Self.storefront(transaction), transaction.appAccountToken ?? "-",
            ])
        }
        print("order \(orderId) of \(app), \(environment.environment.rawValue): \(signed.count) transactions")
        if !rows.isEmpty {
            print(TextTable(
                ["transaction", "original", "product", "type", "purchased (UTC)", "expires (UTC)", "revoked (UTC)",
                 "storefront", "appAccountToken"],
                rows
            ).render())
        }
        guard leftOut.isEmpty else {
            print("LEFT OUT: \(leftOut.count) of \(signed.count) transactions, not printed:")
            for line in leftOut { print("  \(line)") }
            throw ExitCode(Self.leftOutStatus)
        }
    }

    /// The country code and Apple's storefront id: "GBR 143444".
    static func storefront(_ transaction: SignedTransaction) -> String {
        let parts = [transaction.storefront, transaction.storefrontId].compactMap { $0 }
        return parts.isEmpty ? "-" : parts.joined(separator: " ")
    }

    static func date(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "-" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
