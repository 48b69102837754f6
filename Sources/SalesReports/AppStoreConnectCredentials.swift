import AppStoreClient
import CurlHTTP

/// How to reach the App Store Connect API for sales reports: an App Store Connect API key (Users and Access >
/// Integrations > App Store Connect API, a role that may read sales: Admin, Finance or Sales), which is not the
/// In-App Purchase key of the App Store Server API, and the vendor number the reports are filed under.
public struct AppStoreConnectCredentials: Sendable {
    /// The key's id (`APPSTORE_CONNECT_KEY_ID`): the token's `kid`.
    public var keyID: String
    /// The issuer id shown above the keys (`APPSTORE_CONNECT_ISSUER_ID`, a UUID): the token's `iss`.
    public var issuerID: String
    /// The key's `.p8` file's text (PKCS #8 PEM, P-256, ES256). Never printed.
    public var privateKeyPEM: String
    /// Where `privateKeyPEM` came from (the file, for `APPSTORE_CONNECT_PRIVATE_KEY_FILE`), for messages.
    public var privateKeySource: String
    /// The vendor number (`APPSTORE_VENDOR_NUMBER`): App Store Connect > Payments and Financial Reports, top left.
    public var vendorNumber: String
    /// The API's base URL (`APPSTORE_CONNECT_API_URL`): https, or plain http only to a loopback host (the fake).
    public var apiBaseURL: String

    public static let appleURL = "https://api.appstoreconnect.apple.com"

    public init(
        keyID: String, issuerID: String, privateKeyPEM: String, privateKeySource: String = "(in memory)",
        vendorNumber: String, apiBaseURL: String = AppStoreConnectCredentials.appleURL
    ) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.privateKeyPEM = privateKeyPEM
        self.privateKeySource = privateKeySource
        self.vendorNumber = vendorNumber
        self.apiBaseURL = apiBaseURL
    }

    static let keyFix = "set APPSTORE_CONNECT_PRIVATE_KEY_FILE to an App Store Connect API key (.p8) from App Store "
        + "Connect (Users and Access > Integrations > App Store Connect API), not the In-App Purchase key"

    /// The key, read; errors name the setting to fix.
    func privateKey() throws(SalesReportFetchError) -> ServerAPIPrivateKey {
        do {
            return try ServerAPIPrivateKey(
                pemRepresentation: privateKeyPEM, source: privateKeySource,
                setting: "APPSTORE_CONNECT_PRIVATE_KEY_FILE", fix: Self.keyFix
            )
        } catch {
            throw SalesReportFetchError(.configuration, error.message)
        }
    }

    /// Every setting present and of its form; the URL https (or loopback http).
    public func validate() throws(SalesReportFetchError) {
        do {
            try AppStoreConfiguration.checkURL(apiBaseURL, setting: "APPSTORE_CONNECT_API_URL")
        } catch {
            throw SalesReportFetchError(.configuration, error.message)
        }
        if keyID.isEmpty {
            throw SalesReportFetchError(
                .configuration, "APPSTORE_CONNECT_KEY_ID is empty: set it to the App Store Connect API key's id"
            )
        }
        if issuerID.isEmpty {
            throw SalesReportFetchError(
                .configuration,
                "APPSTORE_CONNECT_ISSUER_ID is empty: set it to the issuer id shown above the App Store Connect API "
                    + "keys"
            )
        }
        let digits = vendorNumber.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        if vendorNumber.isEmpty || vendorNumber.count > 20 || !digits {
            throw SalesReportFetchError(
                .configuration,
                "APPSTORE_VENDOR_NUMBER must be your vendor number, digits only (App Store Connect > Payments and "
                    + "Financial Reports, top left)"
            )
        }
        _ = try privateKey()
    }
}

extension AppStoreConnectCredentials: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Everything but the key, which shows as where it came from.
    public var description: String {
        "AppStoreConnectCredentials(keyID: \(keyID), issuerID: \(issuerID), privateKey: (from \(privateKeySource)), "
            + "vendorNumber: \(vendorNumber), apiBaseURL: \(apiBaseURL))"
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(reflecting: description) }
}
