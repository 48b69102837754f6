import AppStoreSignedData
import Crypto
import Foundation
import Testing

@testable import AppStoreClient

@Suite("App Store Server API: the key, the tokens, the configuration")
struct ServerAPIKeyTests {
    static func temporaryFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).p8").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func configuration(_ key: ServerAPIPrivateKey) -> ServerAPIConfiguration {
        ServerAPIConfiguration(keyID: "KEY1234567", issuerID: "57246542-96fe-1a63-e053-0824d011072a", privateKey: key)
    }

    @Test("a .p8 file (PKCS #8 P-256) loads, and signs what its public half verifies")
    func loads() throws {
        let key = P256.Signing.PrivateKey()
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let path = try Self.temporaryFile(key.pemRepresentation)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loaded = try ServerAPIPrivateKey(contentsOfFile: path)
        #expect(loaded.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(loaded.source == path)
    }

    @Test("a missing file, an empty setting, another key type, no key: an error naming the setting and the fix")
    func refused() throws {
        let sec1 = P256.Signing.PrivateKey().pemRepresentation
            .replacingOccurrences(of: "PRIVATE KEY", with: "EC PRIVATE KEY")
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"
        let broken = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
        let cases: [(String, String)] = [
            (P384.Signing.PrivateKey().pemRepresentation, "P-256"),
            (Curve25519.Signing.PrivateKey().rawRepresentation.base64EncodedString(), "not a PEM private key"),
            (sec1, "SEC 1"), (encrypted, "encrypted"), (broken, "P-256"), ("", "not a PEM private key"),
        ]
        for (text, words) in cases {
            let path = try Self.temporaryFile(text)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let error = #expect(throws: AppStoreConfigurationError.self) {
                try ServerAPIPrivateKey(contentsOfFile: path)
            }
            let message = error?.description ?? ""
            #expect(message.contains(words), "\(message)")
            #expect(message.contains("APPSTORE_PRIVATE_KEY_FILE (\(path))"), "\(message)")
            #expect(message.contains("set APPSTORE_PRIVATE_KEY_FILE to the In-App Purchase key (.p8)"), "\(message)")
        }
        for path in ["/nonexistent/AuthKey_ABC.p8", ""] {
            let error = #expect(throws: AppStoreConfigurationError.self) {
                try ServerAPIPrivateKey(contentsOfFile: path)
            }
            #expect(error?.description.hasPrefix("APPSTORE_PRIVATE_KEY_FILE") == true, "\(String(describing: error))")
            #expect(error?.description.contains("App Store Connect") == true)
        }
        let directory = FileManager.default.temporaryDirectory.path
        let error = #expect(throws: AppStoreConfigurationError.self) {
            try ServerAPIPrivateKey(contentsOfFile: directory)
        }
        #expect(error?.description.contains("is a directory") == true, "\(String(describing: error))")
    }

    @Test("the key never shows in a description, a debug description, an interpolation or a dump")
    func redacted() throws {
        let key = P256.Signing.PrivateKey()
        let secrets = [
            key.rawRepresentation.base64EncodedString(), Base64URL.encode(key.rawRepresentation),
            key.rawRepresentation.map { String(format: "%02x", $0) }.joined(),
            key.derRepresentation.base64EncodedString(),
        ]
        let pemBody = key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        let path = try Self.temporaryFile(key.pemRepresentation)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = Self.configuration(try ServerAPIPrivateKey(contentsOfFile: path))
        var dumped = ""
        dump(configuration, to: &dumped)
        var dumpedKey = ""
        dump(configuration.privateKey, to: &dumpedKey)
        let texts = [
            "\(configuration)", String(describing: configuration), String(reflecting: configuration), dumped,
            "\(configuration.privateKey)", String(reflecting: configuration.privateKey), dumpedKey,
        ]
        for text in texts {
            #expect(text.contains(path) || text.contains("privateKey"), "\(text)")
            for secret in secrets + [pemBody, String(pemBody.prefix(16))] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect("\(configuration)".contains("KEY1234567"))
    }

    @Test("the token: ES256 over header and claims as Apple specifies, verified with the public key")
    func token() throws {
        let key = P256.Signing.PrivateKey()
        let signer = ServerAPITokenSigner(
            keyID: "KEY1234567", issuerID: "issuer-uuid",
            privateKey: try ServerAPIPrivateKey(pemRepresentation: key.pemRepresentation),
            lifetimeSeconds: 600
        )
        let token = try signer.make(bundleId: "com.example.app", issuedAt: 1_700_000_000)
        let parts = token.split(separator: ".")
        try #require(parts.count == 3)
        let header = try Self.object(parts[0])
        let claims = try Self.object(parts[1])
        #expect(header?.count == 3)
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == "KEY1234567")
        #expect(header?["typ"] as? String == "JWT")
        #expect(claims?.count == 5)
        #expect(claims?["iss"] as? String == "issuer-uuid")
        #expect(claims?["iat"] as? Int == 1_700_000_000)
        #expect(claims?["exp"] as? Int == 1_700_000_600)
        #expect(claims?["aud"] as? String == "appstoreconnect-v1")
        #expect(claims?["bid"] as? String == "com.example.app")
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        let stranger = P256.Signing.PrivateKey().publicKey
        #expect(!stranger.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
    }

    @Test("a token is reused per bundle id until a minute before it expires")
    func reuse() throws {
        let signer = ServerAPITokenSigner(
            keyID: "K", issuerID: "I",
            privateKey: try ServerAPIPrivateKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation),
            lifetimeSeconds: 600
        )
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let first = try signer.token(bundleId: "a", now: start)
        #expect(try signer.token(bundleId: "a", now: start.addingTimeInterval(539)) == first)
        let other = try signer.token(bundleId: "b", now: start)
        #expect(other != first)
        let renewed = try signer.token(bundleId: "a", now: start.addingTimeInterval(540))
        #expect(renewed != first)
        let claims = try Self.object(renewed.split(separator: ".")[1])
        #expect(claims?["iat"] as? Int == 1_700_000_540)
    }

    /// A base64url part of a JWT, as a JSON object.
    static func object(_ part: Substring) throws -> [String: Any]? {
        try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(part)))) as? [String: Any]
    }

    @Test("the configuration: Apple's URLs by default, https only but for loopback, ids and limits required")
    func validation() throws {
        let key = try ServerAPIPrivateKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation)
        var configuration = Self.configuration(key)
        #expect(configuration.productionURL == "https://api.storekit.apple.com")
        #expect(configuration.sandboxURL == "https://api.storekit-sandbox.apple.com")
        #expect(configuration.requestsPerSecond(for: .orderLookup) == 10)
        #expect(configuration.requestsPerSecond(for: .transactionHistory) == 50)
        try configuration.validate()

        func refused(_ change: (inout ServerAPIConfiguration) -> Void, _ words: String) {
            var changed = configuration
            change(&changed)
            let error = #expect(throws: AppStoreConfigurationError.self) { try changed.validate() }
            #expect(error?.description.contains(words) == true, "\(String(describing: error))")
        }
        refused({ $0.productionURL = "http://api.example.com" }, "APPSTORE_API_URL uses plain http")
        refused({ $0.sandboxURL = "ftp://127.0.0.1" }, "APPSTORE_SANDBOX_API_URL must be an https URL")
        refused({ $0.keyID = "" }, "APPSTORE_KEY_ID")
        refused({ $0.issuerID = "" }, "APPSTORE_ISSUER_ID")
        refused({ $0.tokenLifetimeSeconds = 3601 }, "3600")
        refused({ $0.requestsPerSecond[.orderLookup] = 0 }, "order_lookup")
        refused({ $0.burst = 0 }, "burst")
        configuration.productionURL = "http://127.0.0.1:8080"
        configuration.sandboxURL = "http://localhost:8080/sandbox"
        try configuration.validate()
    }
}
