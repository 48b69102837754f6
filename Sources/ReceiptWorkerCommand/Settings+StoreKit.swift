import AppStoreClient
import AppStoreSignedData
import CurlHTTP
import Foundation
import Workers
import X509

extension Settings {
    /// "on" or "off" (also true/false, yes/no, 1/0).
    func toggle(_ name: String, default value: Bool) throws -> Bool {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces).lowercased(), !text.isEmpty else {
            return value
        }
        switch text {
        case "on", "true", "yes", "1": return true
        case "off", "false", "no", "0": return false
        default: throw ConfigurationError(.invalid, "\(name) must be on or off, got \"\(text)\"")
        }
    }

    /// How StoreKit 2 signed data is verified: `SignedDataVerifier(environment:ocsp:)` (the pinned Apple Root CA - G3
    /// plus any APPSTORE_ROOT_CERTIFICATES, APPSTORE_ONLINE_CHECKS on by default with OCSP over libcurl,
    /// APPSTORE_ALLOW_TEST_ENVIRONMENTS off by default; tested in AppStoreSignedDataTests, ProductionWiringTests).
    func signedDataVerifier(transport: CurlMultiTransport) throws -> SignedDataVerifier {
        do {
            return try SignedDataVerifier(environment: environment, ocsp: .curl(transport))
        } catch {
            throw ConfigurationError(error.isUnreadableFile ? .unreadableFile : .invalid, error.message)
        }
    }
}

extension Settings {
    /// The App Store Server API, when APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE are set (all
    /// three or none); its base URLs from APPSTORE_API_URL and APPSTORE_SANDBOX_API_URL (Apple's by default; https
    /// only, plain http for loopback hosts, like the verifyReceipt URLs).
    func serverAPIConfiguration(timeoutSeconds: Double) throws -> ServerAPIConfiguration? {
        let names = ["APPSTORE_KEY_ID", "APPSTORE_ISSUER_ID", "APPSTORE_PRIVATE_KEY_FILE"]
        let values = names.map { environment[$0]?.trimmingCharacters(in: .whitespaces) ?? "" }
        guard values.contains(where: { !$0.isEmpty }) else { return nil }
        let missing = zip(names, values).filter { $0.1.isEmpty }.map(\.0)
        guard missing.isEmpty else {
            throw ConfigurationError(
                .missing,
                "the App Store Server API needs APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE "
                    + "together; missing: \(missing.joined(separator: ", ")) (App Store Connect → Users and Access → "
                    + "Integrations → In-App Purchase)"
            )
        }
        let configuration: ServerAPIConfiguration
        do {
            configuration = ServerAPIConfiguration(
                keyID: values[0], issuerID: values[1],
                privateKey: try ServerAPIPrivateKey(contentsOfFile: values[2]),
                productionURL: string("APPSTORE_API_URL", flag: nil, default: ServerAPIConfiguration.appleProductionURL),
                sandboxURL: string(
                    "APPSTORE_SANDBOX_API_URL", flag: nil, default: ServerAPIConfiguration.appleSandboxURL
                ),
                timeoutSeconds: timeoutSeconds
            )
            try configuration.validate()
        } catch {
            throw ConfigurationError(.invalid, error.description)
        }
        return configuration
    }

    /// The App Store Server API for a command that cannot run without it (`command`: its name, for the message):
    /// exit 2 naming the three settings when none is set.
    func requiredServerAPIConfiguration(for command: String, timeoutSeconds: Double = 15) throws
        -> ServerAPIConfiguration
    {
        guard let configuration = try serverAPIConfiguration(timeoutSeconds: timeoutSeconds) else {
            throw ConfigurationError(
                .missing,
                "\(command) needs the App Store Server API: set APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and "
                    + "APPSTORE_PRIVATE_KEY_FILE"
            )
        }
        return configuration
    }

    /// The one app a command asks Apple for: `--bundle-id`, else APPLE_BUNDLE_IDS when it names exactly one.
    func singleBundleId(_ flag: String?) throws -> String {
        let apps = try bundleIds(flag)
        guard apps.count == 1, let app = apps.first else {
            throw ConfigurationError(.missing, "give --bundle-id (APPLE_BUNDLE_IDS names \(apps.count) apps)")
        }
        return app
    }

    /// RECEIPT_SOURCE: `auto` (the default: the App Store Server API when it is configured, else verifyReceipt),
    /// `api` or `verifyreceipt`.
    func receiptSource(serverAPI: Bool) throws -> WorkerConfiguration.ReceiptSource {
        let text = string("RECEIPT_SOURCE", flag: nil, default: "auto").lowercased()
        switch text {
        case "auto": return serverAPI ? .serverAPI : .verifyReceipt
        case "verifyreceipt": return .verifyReceipt
        case "api":
            guard serverAPI else {
                throw ConfigurationError(
                    .conflict, "RECEIPT_SOURCE=api needs the App Store Server API: set APPSTORE_KEY_ID, "
                        + "APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE"
                )
            }
            return .serverAPI
        default:
            throw ConfigurationError(.invalid, "RECEIPT_SOURCE must be auto, api or verifyreceipt, got \"\(text)\"")
        }
    }

    /// Whether `work` needs verifyReceipt's shared secret: when receipts go to verifyReceipt (RECEIPT_SOURCE
    /// `verifyreceipt`, or `auto` without the App Store Server API key). verifyReceipt is its only user: with `api`
    /// (or `auto` with the key) a receipt's signature is checked here and its transactions read from the Server API,
    /// and nothing else `work` does (signed transactions, notifications, refunds, subscriptions, reconciliation)
    /// sends it. Errors of RECEIPT_SOURCE itself are thrown.
    func needsSharedSecret() throws -> Bool {
        let keyNames = ["APPSTORE_KEY_ID", "APPSTORE_ISSUER_ID", "APPSTORE_PRIVATE_KEY_FILE"]
        let hasKey = keyNames.contains { !(environment[$0]?.trimmingCharacters(in: .whitespaces) ?? "").isEmpty }
        return try receiptSource(serverAPI: hasKey) == .verifyReceipt
    }

    /// APPSTORE_REQUIRE_ACCOUNT_TOKEN (`toggle`, off by default): a job given only a transaction id needs an
    /// app_account_token equal to the transaction's appAccountToken, else it is rejected `account_mismatch`. A bare
    /// transaction id proves only that the purchase exists for the app, not who made it. Read by `work`.
    static let requireAccountTokenSetting = "APPSTORE_REQUIRE_ACCOUNT_TOKEN"

    /// APPSTORE_CONFIRM: `always` (the default) or `never`.
    func confirmSignedTransactions() throws -> Bool {
        let text = string("APPSTORE_CONFIRM", flag: nil, default: "always").lowercased()
        switch text {
        case "always": return true
        case "never": return false
        default: throw ConfigurationError(.invalid, "APPSTORE_CONFIRM must be always or never, got \"\(text)\"")
        }
    }
}

extension Settings {
    /// APPSTORE_APP_APPLE_IDS: Apple's id of each app (App Store Connect → App Information → Apple ID), which every
    /// production notification carries as appAppleId: `com.example.app=1234567890`, comma separated; a bare number
    /// when APPLE_BUNDLE_IDS names one app.
    func appAppleIds(bundleIds: [String]) throws -> [String: Int64] {
        guard let text = environment["APPSTORE_APP_APPLE_IDS"], !text.trimmingCharacters(in: .whitespaces).isEmpty
        else { return [:] }
        var ids: [String: Int64] = [:]
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let bundleId: String
            let number: String
            if parts.count == 2 {
                (bundleId, number) = (parts[0], parts[1])
            } else if bundleIds.count == 1 {
                (bundleId, number) = (bundleIds[0], parts[0])
            } else {
                throw ConfigurationError(
                    .invalid,
                    "APPSTORE_APP_APPLE_IDS: \"\(item)\" names no app; write bundle_id=apple_id (com.example.app=1234567890)"
                )
            }
            guard let id = Int64(number), id > 0 else {
                throw ConfigurationError(
                    .invalid, "APPSTORE_APP_APPLE_IDS: the Apple ID of \(bundleId) must be a number, got \"\(number)\""
                )
            }
            ids[bundleId] = id
        }
        return ids
    }
}
