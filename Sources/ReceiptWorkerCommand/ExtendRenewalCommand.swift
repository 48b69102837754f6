import AppStoreClient
import AppStoreModel
import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import JSONText
import PostgresClient

/// `receipt-worker extend-renewal`: Apple's renewal-date extensions, each recorded in receipt_renewal_extensions.
struct ExtendRenewalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-renewal",
        abstract: "Extend subscription renewal dates at Apple (one chain, or all active subscribers of a product).",
        discussion: """
            --original-transaction-id ID --days N --reason R: Apple's Extend a Subscription Renewal Date for one \
            purchase chain known here (receipt_subscriptions gives its app and environment). --all --product P \
            --days N --reason R [--storefront CC ...]: Extend Subscription Renewal Dates for All Active \
            Subscribers of P (in the storefronts named, else all), in --environment (Production by default); Apple \
            works through them later, and its RENEWAL_EXTENSION SUMMARY notification completes the request here. \
            --status REQUEST_ID --product P: Get Status of Subscription Renewal Date Extensions for that request. \
            Days: 1 to 90. Reasons: 0 undeclared, 1 customer-satisfaction, 2 other, 3 service-issue. Every \
            request is recorded before Apple is asked (receipt_renewal_extension_request(): who, when, what) and \
            Apple's answer after it; the RENEWAL_EXTENDED notifications Apple sends move the periods' expiry. \
            Apple's "try again" answers are tried again with the same request id, 3 attempts in all. Needs \
            DATABASE_URL (the owner, or receipt_operator) and APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, \
            APPSTORE_PRIVATE_KEY_FILE (and APPSTORE_API_URL, APPSTORE_SANDBOX_API_URL). Exit 0 done (extended, \
            accepted, or the status printed), 1 Apple refused, did not extend, or could not be reached, or the \
            database failed, 2 bad input (nothing sent).
            """
    )

    @Option(help: "Extend this purchase chain (its original transaction id, digits).")
    var originalTransactionId: String?
    @Flag(help: "Extend every active subscriber of --product.")
    var all = false
    @Option(help: "Print the status of this mass extension request (with --product).")
    var status: String?
    @Option(help: "The auto-renewable subscription's product id (--all, --status).")
    var product: String?
    @Option(help: "How many days to extend by: 1 to 90.")
    var days: Int?
    @Option(help: "Apple's reason: 0 undeclared, 1 customer-satisfaction, 2 other, 3 service-issue (number or name).")
    var reason: String?
    @Option(parsing: .upToNextOption, help: "With --all: only these storefronts (ISO 3166-1 alpha-3, e.g. USA CAN).")
    var storefront: [String] = []
    @Option(help: "With --all or --status: Production (default) or Sandbox.")
    var environment: String?
    @Option(help: "With --all or --status: the app (default: the one in APPLE_BUNDLE_IDS, when there is one).")
    var bundleId: String?
    @Flag(help: "Print one JSON object instead of lines.")
    var json = false

    /// Attempts at most for Apple's "try again" answers.
    static let attempts = 3

    func run() throws {
        let request = try checkedInput()
        let settings = Settings()
        let apiConfiguration = try settings.requiredServerAPIConfiguration(for: "extend-renewal")
        let connection = try connect(try settings.databaseURL(as: .operator))
        defer { connection.close() }
        try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        let target = try resolve(request, connection: connection, settings: settings)

        CurlGlobal.initialize()
        let transport = try settings.serverAPITransport(apiConfiguration)
        defer { transport.shutdown() }
        let client = try ServerAPIClient(configuration: apiConfiguration, transport: transport)
        let record = ExtensionRequests(connection: connection)
        let report: Report
        switch request {
        case .one(let id, let days, let reason):
            report = try extendOne(id, days: days, reason: reason, target: target, client: client, record: record)
        case .mass(let product, let days, let reason, let storefronts):
            report = try extendAll(
                product, days: days, reason: reason, storefronts: storefronts, target: target, client: client,
                record: record
            )
        case .status(let requestId, let product):
            report = try askStatus(requestId, product: product, target: target, client: client, record: record)
        }
        print(json ? try JSONOutput.line(report, snakeCaseKeys: true) : report.text)
        if report.failed { throw ExitCode(1) }
    }

    /// What was asked for, checked.
    enum Request {
        case one(originalTransactionId: String, days: Int, reason: Int)
        case mass(productId: String, days: Int, reason: Int, storefronts: [String]?)
        case status(requestIdentifier: String, productId: String)
    }

    /// The app and environment a request goes to.
    struct Target {
        var bundleId: String
        var environment: String
        var endpoint: AppStoreEndpoint { environment == "Sandbox" ? .sandbox : .production }
    }

    /// The flags, checked: a missing or malformed one is a configuration error (exit 2), before anything is sent.
    func checkedInput() throws -> Request {
        let modes = [originalTransactionId != nil, all, status != nil].filter { $0 }.count
        guard modes == 1 else {
            throw ConfigurationError(
                .missing, "give one of --original-transaction-id ID, --all --product P, or --status REQUEST_ID --product P"
            )
        }
        if let status {
            guard let product = try checkedProduct() else {
                throw ConfigurationError(.missing, "--status needs --product (the product the request extended)")
            }
            guard (1...128).contains(status.utf8.count) else {
                throw ConfigurationError(.invalid, "--status takes the request id extend-renewal --all printed")
            }
            return .status(requestIdentifier: status, productId: product)
        }
        let days = try checkedDays()
        let reason = try checkedReason()
        if let originalTransactionId {
            guard (1...32).contains(originalTransactionId.utf8.count),
                originalTransactionId.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else {
                throw ConfigurationError(
                    .invalid,
                    "--original-transaction-id takes Apple's id (1 to 32 digits), got \"\(originalTransactionId)\""
                )
            }
            guard storefront.isEmpty, product == nil else {
                throw ConfigurationError(.invalid, "--storefront and --product go with --all, not one chain")
            }
            return .one(originalTransactionId: originalTransactionId, days: days, reason: reason)
        }
        guard let product = try checkedProduct() else {
            throw ConfigurationError(.missing, "--all needs --product (the auto-renewable subscription to extend)")
        }
        guard storefront.count <= 200 else {
            throw ConfigurationError(.invalid, "--storefront names \(storefront.count) storefronts; give at most 200")
        }
        let codes = try storefront.map { code in
            let upper = code.uppercased()
            guard upper.utf8.count == 3, upper.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
            else {
                throw ConfigurationError(
                    .invalid, "--storefront takes ISO 3166-1 alpha-3 codes such as USA or CAN, got \"\(code)\""
                )
            }
            return upper
        }
        return .mass(productId: product, days: days, reason: reason, storefronts: codes.isEmpty ? nil : codes)
    }

    private func checkedDays() throws -> Int {
        guard let days else { throw ConfigurationError(.missing, "give --days (1 to 90)") }
        guard RenewalExtension.days.contains(days) else {
            throw ConfigurationError(.invalid, "--days \(days) is outside Apple's range: give 1 to 90")
        }
        return days
    }

    /// Apple's extendReasonCode, by number or name.
    static let reasons = ["undeclared": 0, "customer-satisfaction": 1, "other": 2, "service-issue": 3]

    private func checkedReason() throws -> Int {
        guard let reason else {
            throw ConfigurationError(.missing, "give --reason: 0 undeclared, 1 customer-satisfaction, 2 other, 3 service-issue")
        }
        if let code = Int(reason), RenewalExtension.reasonCodes.contains(code) { return code }
        if let code = Self.reasons[reason.lowercased()] { return code }
        throw ConfigurationError(
            .invalid,
            "--reason \"\(reason)\" is not Apple's: give 0 undeclared, 1 customer-satisfaction, 2 other or 3 service-issue"
        )
    }

    private func checkedProduct() throws -> String? {
        guard let product else { return nil }
        guard (1...128).contains(product.utf8.count) else {
            throw ConfigurationError(.invalid, "--product needs a product id of 1 to 128 bytes")
        }
        return product
    }

    /// Where the request goes: one chain's app and environment from receipt_subscriptions; else the flags.
    private func resolve(_ request: Request, connection: PostgresConnection, settings: Settings) throws -> Target {
        if case .one(let id, _, _) = request {
            let rows = try connection.query(
                """
                SELECT bundle_id, environment FROM receipt_subscriptions WHERE original_transaction_id = $1
                ORDER BY environment = 'Production' DESC LIMIT 1
                """,
                [id]
            )
            guard let bundle = rows[0, "bundle_id"], let environment = rows[0, "environment"] else {
                throw ConfigurationError(
                    .invalid,
                    "no subscription here has the original transaction id \(id): check the id (the chain's first "
                        + "transaction), or run subscriptions-refresh --original-transaction-id \(id) first"
                )
            }
            return Target(bundleId: bundle, environment: environment)
        }
        let chosen: String
        switch environment?.lowercased() {
        case nil, "production": chosen = "Production"
        case "sandbox": chosen = "Sandbox"
        case let other?:
            throw ConfigurationError(.invalid, "--environment must be Production or Sandbox, got \"\(other)\"")
        }
        return Target(bundleId: try settings.singleBundleId(bundleId), environment: chosen)
    }
}
