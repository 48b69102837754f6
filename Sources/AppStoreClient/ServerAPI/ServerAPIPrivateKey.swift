import Crypto
import Foundation

/// The In-App Purchase key that signs App Store Server API tokens: the P-256 private key App Store Connect hands out
/// once as a `.p8` file (PKCS #8, PEM). Nothing that prints it shows more than where it came from.
public struct ServerAPIPrivateKey: Sendable {
    let key: P256.Signing.PrivateKey
    /// The file it was read from, or "(in memory)".
    public let source: String

    /// Where the setting's value comes from and how to fix it, appended to every error.
    static let fix = "set APPSTORE_PRIVATE_KEY_FILE to the In-App Purchase key (.p8) downloaded from App Store Connect "
        + "(Users and Access > Integrations > In-App Purchase)"
    /// Key files are a few hundred bytes; anything much larger is the wrong file.
    static let maximumFileBytes = 64 * 1024

    /// Reads the key from `path` (`APPSTORE_PRIVATE_KEY_FILE`).
    public init(contentsOfFile path: String) throws(AppStoreConfigurationError) {
        guard !path.isEmpty else {
            throw AppStoreConfigurationError("APPSTORE_PRIVATE_KEY_FILE is empty: \(Self.fix)")
        }
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if attributes[.type] as? FileAttributeType == .typeDirectory {
                throw AppStoreConfigurationError("APPSTORE_PRIVATE_KEY_FILE (\(path)) is a directory: \(Self.fix)")
            }
            if let size = attributes[.size] as? Int, size > Self.maximumFileBytes {
                throw AppStoreConfigurationError(
                    "APPSTORE_PRIVATE_KEY_FILE (\(path)) is \(size) bytes, too large for a key: \(Self.fix)"
                )
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as AppStoreConfigurationError {
            throw error
        } catch {
            let reason = (error as NSError).localizedDescription
            throw AppStoreConfigurationError(
                "APPSTORE_PRIVATE_KEY_FILE (\(path)) cannot be read: \(reason); \(Self.fix)"
            )
        }
        try self.init(pemRepresentation: String(decoding: data, as: UTF8.self), source: path)
    }

    /// Reads the key from PEM text (tests, or a key held elsewhere than in a file).
    public init(pemRepresentation pem: String, source: String = "(in memory)") throws(AppStoreConfigurationError) {
        try self.init(pemRepresentation: pem, source: source, setting: "APPSTORE_PRIVATE_KEY_FILE", fix: Self.fix)
    }

    /// Reads a key of the same form for another setting (an App Store Connect API key, which signs sales report
    /// downloads): errors name `setting` (and `source`) and end with `fix`.
    public init(
        pemRepresentation pem: String, source: String, setting: String, fix: String
    ) throws(AppStoreConfigurationError) {
        let place = "\(setting) (\(source))"
        if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            throw AppStoreConfigurationError(
                "\(place) holds an encrypted key; Apple's .p8 is not encrypted: \(fix)"
            )
        }
        if pem.contains("-----BEGIN EC PRIVATE KEY-----") {
            throw AppStoreConfigurationError(
                "\(place) holds a SEC 1 EC key, not PKCS #8: \(fix), or convert it with "
                    + "`openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8`"
            )
        }
        guard pem.contains("-----BEGIN PRIVATE KEY-----") else {
            throw AppStoreConfigurationError(
                "\(place) is not a PEM private key (no -----BEGIN PRIVATE KEY----- line): \(fix)"
            )
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw AppStoreConfigurationError("\(place) does not hold a P-256 (ES256) PKCS #8 private key: \(fix)")
        }
        self.source = source
    }

    /// The public half, which Apple holds (and the fake App Store is given).
    public var publicKey: P256.Signing.PublicKey {
        key.publicKey
    }
}

extension ServerAPIPrivateKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "ServerAPIPrivateKey(from: \(source))" }
    public var debugDescription: String { description }
    /// `dump` and the debugger see the source only, never the key's fields.
    public var customMirror: Mirror { Mirror(self, children: ["source": source], displayStyle: .struct) }
}
