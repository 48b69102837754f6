import Foundation
import X509

/// How `receipt-worker` verifies signed data in production, from its environment. Here rather than in the command so
/// that a test can hold the wiring to its promises: the pinned Apple Root CA - G3 always trusted, online checks on
/// and test environments off unless the operator says otherwise, an OCSP client whenever checks are online.
extension SignedDataVerifier {
    /// A setting that cannot be used; `isUnreadableFile` for a root certificate file that cannot be read.
    public struct SettingError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var isUnreadableFile: Bool
        public var description: String { message }
    }

    /// APPSTORE_ONLINE_CHECKS when unset: now plus OCSP.
    public static let onlineChecksByDefault = true
    /// APPSTORE_ALLOW_TEST_ENVIRONMENTS when unset: Xcode and LocalTesting data refused.
    public static let testEnvironmentsByDefault = false

    /// The verifier `work` uses: `Configuration(environment:)`, with `ocsp` when the checks are online.
    public convenience init(environment: [String: String], ocsp: @autoclosure () -> OCSPClient) throws(SettingError) {
        let configuration = try Configuration(environment: environment)
        self.init(configuration: configuration, ocsp: configuration.onlineChecks ? ocsp() : nil)
    }
}

extension SignedDataVerifier.Configuration {
    /// The pinned Apple Root CA - G3 plus any APPSTORE_ROOT_CERTIFICATES (comma-separated DER or PEM files, for the
    /// fake App Store and tests), APPSTORE_ONLINE_CHECKS (on by default: now plus OCSP; off: at each payload's
    /// signedDate) and APPSTORE_ALLOW_TEST_ENVIRONMENTS (off by default; development only). Toggles take on/off,
    /// true/false, yes/no or 1/0.
    public init(environment: [String: String]) throws(SignedDataVerifier.SettingError) {
        var roots = [AppleRootCertificate.certificate]
        let paths = (environment["APPSTORE_ROOT_CERTIFICATES"] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for path in paths {
            roots.append(try Self.certificate(at: path))
        }
        self.init(
            rootCertificates: roots,
            onlineChecks: try Self.toggle(
                "APPSTORE_ONLINE_CHECKS", environment, default: SignedDataVerifier.onlineChecksByDefault
            ),
            allowTestEnvironments: try Self.toggle(
                "APPSTORE_ALLOW_TEST_ENVIRONMENTS", environment, default: SignedDataVerifier.testEnvironmentsByDefault
            )
        )
    }

    private static func toggle(
        _ name: String, _ environment: [String: String], default value: Bool
    ) throws(SignedDataVerifier.SettingError) -> Bool {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces).lowercased(), !text.isEmpty else {
            return value
        }
        switch text {
        case "on", "true", "yes", "1": return true
        case "off", "false", "no", "0": return false
        default:
            throw SignedDataVerifier.SettingError(message: "\(name) must be on or off, got \"\(text)\"", isUnreadableFile: false)
        }
    }

    /// A certificate file, DER or PEM.
    static func certificate(at path: String) throws(SignedDataVerifier.SettingError) -> Certificate {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw SignedDataVerifier.SettingError(
                message: "APPSTORE_ROOT_CERTIFICATES names \(path), which cannot be read", isUnreadableFile: true
            )
        }
        do {
            if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                return try Certificate(pemEncoded: text)
            }
            return try Certificate(derEncoded: Array(bytes))
        } catch {
            throw SignedDataVerifier.SettingError(
                message: "APPSTORE_ROOT_CERTIFICATES: \(path) is not a certificate (DER or PEM): \(error)",
                isUnreadableFile: false
            )
        }
    }
}
