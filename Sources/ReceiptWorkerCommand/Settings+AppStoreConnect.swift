import Foundation
import SalesReports
import Workers

extension Settings {
    /// The settings of the App Store Connect API key that downloads Apple's Sales reports.
    static let appStoreConnectNames = [
        "APPSTORE_CONNECT_KEY_ID", "APPSTORE_CONNECT_ISSUER_ID", "APPSTORE_CONNECT_PRIVATE_KEY_FILE",
        "APPSTORE_VENDOR_NUMBER",
    ]

    /// The App Store Connect API key that downloads Apple's Sales reports (`reconcile`, and `work` with RECONCILE_AT):
    /// not the In-App Purchase key of the App Store Server API (APPSTORE_KEY_ID, …), but a team key with the Sales or
    /// Finance role. Every missing setting is named at once, with where to find it (`why`: what needs them).
    func appStoreConnectCredentials(for why: String) throws -> AppStoreConnectCredentials {
        let values = Self.appStoreConnectNames.map { environment[$0]?.trimmingCharacters(in: .whitespaces) ?? "" }
        let missing = zip(Self.appStoreConnectNames, values).filter { $0.1.isEmpty }.map(\.0)
        guard missing.isEmpty else {
            throw ConfigurationError(
                .missing,
                "\(why) needs an App Store Connect API key (not the In-App Purchase key); missing: "
                    + "\(missing.joined(separator: ", ")). Make a team key with the Sales or Finance role under "
                    + "App Store Connect → Users and Access → Integrations → App Store Connect API (key id, issuer "
                    + "id, the .p8 file); the vendor number is shown in Payments and Financial Reports"
            )
        }
        let path = values[2]
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(
                .unreadableFile,
                "APPSTORE_CONNECT_PRIVATE_KEY_FILE names \(path), which cannot be read (the .p8 file App Store Connect "
                    + "gave for the key)"
            )
        }
        let credentials = AppStoreConnectCredentials(
            keyID: values[0], issuerID: values[1], privateKeyPEM: pem, privateKeySource: path, vendorNumber: values[3],
            apiBaseURL: string("APPSTORE_CONNECT_API_URL", flag: nil, default: AppStoreConnectCredentials.appleURL)
        )
        do {
            try credentials.validate()
        } catch {
            throw ConfigurationError(.invalid, error.message)
        }
        return credentials
    }

    /// `work`'s reconciliation: with RECONCILE_AT, yesterday's report downloaded with the App Store Connect API key
    /// (which must then be configured); nil without RECONCILE_AT.
    func reconcileSchedule() throws -> ReconcileSchedule? {
        guard let at = try reconcileAt() else { return nil }
        let credentials = try appStoreConnectCredentials(for: "RECONCILE_AT")
        let client: SalesReportClient
        do {
            client = try SalesReportClient(credentials: credentials)
        } catch {
            throw ConfigurationError(.invalid, error.message)
        }
        return ReconcileSchedule(at: at) { day in try ReconcileReport.download(day, client: client) }
    }

    /// RECONCILE_AT: the time of day (HH:MM, Pacific Time) from which `work` reconciles yesterday; nil when unset.
    func reconcileAt() throws -> String? {
        let text = string("RECONCILE_AT", flag: nil, default: "").trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        guard let time = ReconcileSchedule.timeOfDay(text) else {
            throw ConfigurationError(
                .invalid,
                "RECONCILE_AT must be a time of day HH:MM (24 hours, Pacific Time), e.g. 09:00, got \"\(text)\""
            )
        }
        return time
    }
}
