import AppleFixtureFiles
import Crypto
import FakeAppStore
import Foundation
import Synchronization
import SwiftASN1
import Testing
import X509

@testable import AppStoreSignedData

/// `receipt-worker work`'s verifier as its environment makes it (`SignedDataVerifier(environment:ocsp:)`, which
/// `Settings.signedDataVerifier` calls): Apple's pinned root always trusted, online checks with OCSP unless turned
/// off, test environments refused unless turned on.
@Suite("Signed data: the production wiring")
struct ProductionWiringTests {
    static let ocspCalls = Mutex(0)
    static let ocsp = OCSPClient { _, _ in
        ProductionWiringTests.ocspCalls.withLock { $0 += 1 }
        throw VerificationOrderTests.Unreachable()
    }

    static func fingerprints(_ certificates: [Certificate]) throws -> [String] {
        try certificates.map { certificate in
            var serializer = SwiftASN1DERSerializer()
            return SHA256.hash(data: try serializer.der(certificate)).map { String(format: "%02x", $0) }.joined()
        }
    }

    @Test("with nothing set: Apple's root only, online checks with an OCSP client, test environments refused")
    func defaults() throws {
        let verifier = try SignedDataVerifier(environment: [:], ocsp: Self.ocsp)
        #expect(try Self.fingerprints(verifier.configuration.rootCertificates) == [AppleRootCertificate.sha256Fingerprint])
        #expect(verifier.configuration.onlineChecks)
        #expect(verifier.ocsp != nil, "online checks need the OCSP client")
        #expect(!verifier.configuration.allowTestEnvironments)
        #expect(verifier.configuration.onlineCacheSeconds == 15 * 60)
        // Blank values are unset.
        let blank = try SignedDataVerifier(
            environment: ["APPSTORE_ONLINE_CHECKS": " ", "APPSTORE_ALLOW_TEST_ENVIRONMENTS": ""], ocsp: Self.ocsp
        )
        #expect(blank.configuration.onlineChecks && !blank.configuration.allowTestEnvironments)
    }

    @Test("the defaults at work: real Apple data is checked now (its leaf expired in 2023), Xcode data refused", .needsAppleFixtures)
    func defaultsAtWork() throws {
        let verifier = try SignedDataVerifier(environment: [:], ocsp: Self.ocsp)
        let apple = try AppleFixtureFiles.appleTestNotification()
        let online = #expect(throws: SignedDataError.self) { try verifier.verify(apple) }
        #expect(online?.code == .untrustedChain, "validated at now, not at its signedDate: \(String(describing: online))")
        let xcode = try AppleFixtureFiles.text("appstoreserverlibrary-xcode-signed-transaction.jws")
        let refused = #expect(throws: SignedDataError.self) { try verifier.verify(xcode) }
        #expect(refused?.code == .testEnvironment)
        // Offline, the pinned root verifies Apple's data at its signedDate, with no OCSP client at all.
        let offline = try SignedDataVerifier(environment: ["APPSTORE_ONLINE_CHECKS": "off"], ocsp: Self.ocsp)
        #expect(offline.ocsp == nil)
        #expect(try offline.verify(apple).environment == "Sandbox")
    }

    @Test("the settings turn each check as documented; a value that is no toggle, or an unreadable root, is an error")
    func settings() throws {
        let chain = try SigningChain()
        let path = NSTemporaryDirectory() + "rw-root-\(UUID().uuidString).pem"
        try chain.root.serializeAsPEM().pemString.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let changed = try SignedDataVerifier(
            environment: [
                "APPSTORE_ROOT_CERTIFICATES": " \(path) ", "APPSTORE_ONLINE_CHECKS": "no",
                "APPSTORE_ALLOW_TEST_ENVIRONMENTS": "on",
            ],
            ocsp: Self.ocsp
        )
        #expect(try Self.fingerprints(changed.configuration.rootCertificates).first == AppleRootCertificate.sha256Fingerprint)
        #expect(changed.configuration.rootCertificates.count == 2)
        #expect(!changed.configuration.onlineChecks)
        #expect(changed.configuration.allowTestEnvironments)

        let toggle = #expect(throws: SignedDataVerifier.SettingError.self) {
            try SignedDataVerifier(environment: ["APPSTORE_ONLINE_CHECKS": "maybe"], ocsp: Self.ocsp)
        }
        #expect(toggle?.message.contains("APPSTORE_ONLINE_CHECKS must be on or off") == true)
        let missing = #expect(throws: SignedDataVerifier.SettingError.self) {
            try SignedDataVerifier(environment: ["APPSTORE_ROOT_CERTIFICATES": "/nonexistent/root.pem"], ocsp: Self.ocsp)
        }
        #expect(missing?.isUnreadableFile == true)
    }
}

/// DER bytes of a certificate.
struct SwiftASN1DERSerializer {
    mutating func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = SwiftASN1.DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
