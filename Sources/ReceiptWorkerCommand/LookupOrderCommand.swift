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
            APPSTORE_ROOT_CERTIFICATES, APPSTORE_ONLINE_CHECKS and APPLE_BUNDLE_IDS. Exit 1 when Apple does not \
            know the order id or cannot be asked.
            """
    )

    @Argument(help: "The order id on the customer's e-mailed receipt (e.g. MK5TTTVWJH).")
    var orderId: String
    @Option(help: "The app's bundle id (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?

    func run() throws {
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "lookup-order")
        let app = try settings.singleBundleId(bundleId)
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
        for jws in signed {
            do {
                let transaction = try SignedTransaction.verified(jws, by: verifier)
                rows.append([
                    transaction.transactionId ?? "-", transaction.originalTransactionId ?? "-",
                    transaction.productId ?? "-", transaction.type ?? "-", Self.date(transaction.purchaseDateMs),
                    Self.date(transaction.expiresDateMs), Self.date(transaction.revocationDateMs),
                    transaction.appAccountToken ?? "-",
                ])
            } catch {
                rows.append(["(not verified: \(error.message))", "", "", "", "", "", "", ""])
            }
        }
        print("order \(orderId) of \(app), \(environment.environment.rawValue): \(signed.count) transactions")
        if !rows.isEmpty {
            print(TextTable(
                ["transaction", "original", "product", "type", "purchased (UTC)", "expires (UTC)", "revoked (UTC)",
                 "appAccountToken"],
                rows
            ).render())
        }
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
