import AppStoreSignedData
import AppleFixtureFiles
import Crypto
import FakeAppStore
import Foundation
import Synchronization
import SwiftASN1
import Testing
import X509

/// The verifier against real Apple-signed data (offline at its signedDate), Apple's test-CA data, Xcode data, and
/// chains and signatures made here at test time, each broken one way.
@Suite("Signed data: JWS and certificate chains")
struct SignedDataVerifierTests {
    static let offline = SignedDataVerifier.Configuration(onlineChecks: false)

    /// An OCSP client that must not be reached (the machine reaches no OCSP responder); records what it was asked.
    static let unreachable = OCSPClient { _, uri in throw Unreachable(uri: uri) }
    struct Unreachable: Error { var uri: String }

    static func appleNotification() throws -> String {
        try AppleFixtureFiles.appleTestNotification()
    }

    static func header(_ jws: String) throws -> [String: Any] {
        let part = String(jws.split(separator: ".")[0])
        let bytes = try #require(Data(base64Encoded: Self.padded(part)))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }

    static func padded(_ base64url: String) -> String {
        let base64 = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return base64 + String(repeating: "=", count: (4 - base64.count % 4) % 4)
    }

    /// The JWS with its header replaced (the signature no longer covers it).
    static func withHeader(_ jws: String, _ change: (inout [String: Any]) -> Void) throws -> String {
        var header = try Self.header(jws)
        change(&header)
        let parts = jws.split(separator: ".")
        let encoded = JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: header))
        return encoded + "." + parts[1] + "." + parts[2]
    }

    static func expectRejected(
        _ code: SignedDataError.Code, _ verifier: SignedDataVerifier, _ jws: String, now: Date = Date(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: SignedDataError.self, sourceLocation: sourceLocation) {
            try verifier.verify(jws, now: now)
        }
        #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    @Test("the embedded Apple Root CA - G3 is the one Apple publishes")
    func pinnedRoot() throws {
        let digest = SHA256.hash(data: AppleRootCertificate.der).map { String(format: "%02x", $0) }.joined()
        #expect(digest == AppleRootCertificate.sha256Fingerprint)
        #expect(AppleRootCertificate.certificate.subject.description.contains("Apple Root CA - G3"))
    }

    @Test(
        "a real Apple-signed notification verifies offline at its signedDate, and not at today's date",
        .needsAppleFixtures
    )
    func realAppleNotification() throws {
        let jws = try Self.appleNotification()
        let verified = try SignedDataVerifier(configuration: Self.offline).verify(jws)
        #expect(verified.signedDateMs == 1_662_122_492_884)
        #expect(verified.environment == "Sandbox")
        let payload = try JSONSerialization.jsonObject(with: Data(verified.payload)) as? [String: Any]
        #expect(payload?["notificationType"] as? String == "TEST")

        // Online, the validation time is now: the leaf expired in 2023. The revocation check is never reached.
        let online = SignedDataVerifier(configuration: .init(onlineChecks: true), ocsp: Self.unreachable)
        Self.expectRejected(.untrustedChain, online, jws)
    }

    @Test(
        "a tampered payload, a tampered header or a swapped signature of real Apple data is refused",
        .needsAppleFixtures
    )
    func tamperedAppleData() throws {
        let jws = try Self.appleNotification()
        let parts = jws.split(separator: ".").map(String.init)
        let verifier = SignedDataVerifier(configuration: Self.offline)
        var payload = try #require(
            try JSONSerialization.jsonObject(with: Data(base64Encoded: Self.padded(parts[1]))!) as? [String: Any]
        )
        payload["notificationType"] = "REFUND"
        let tampered = parts[0] + "." + JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: payload))
            + "." + parts[2]
        Self.expectRejected(.badSignature, verifier, tampered)
        Self.expectRejected(.badSignature, verifier, try Self.withHeader(jws) { $0["typ"] = "JWT" })
        var signature = Array(Data(base64Encoded: Self.padded(parts[2]))!)
        signature.swapAt(0, 63)
        Self.expectRejected(.badSignature, verifier, parts[0] + "." + parts[1] + "." + JWSSigner.base64URL(signature))
        Self.expectRejected(.badSignature, verifier, parts[0] + "." + parts[1] + "." + JWSSigner.base64URL(signature.prefix(32)))
    }

    @Test(
        "Apple's test-CA transaction verifies with the test CA as an extra root, and not without it",
        .needsAppleFixtures
    )
    func appleTestCA() throws {
        let jws = try AppleFixtureFiles.text("appstoreserverlibrary-testca-signed-transaction.jws")
        let x5c = try #require(try Self.header(jws)["x5c"] as? [String])
        let testCA = try Certificate(derEncoded: Array(try #require(Data(base64Encoded: x5c[2]))))
        let withTestCA = SignedDataVerifier(
            configuration: .init(rootCertificates: [AppleRootCertificate.certificate, testCA], onlineChecks: false)
        )
        let verified = try withTestCA.verify(jws)
        let payload = try JSONSerialization.jsonObject(with: Data(verified.payload)) as? [String: Any]
        #expect(payload?["bundleId"] as? String == "com.example")
        // Only Apple's root: the root the JWS carries is not trusted for being there.
        Self.expectRejected(.untrustedChain, SignedDataVerifier(configuration: Self.offline), jws)
        // Without x5c.
        Self.expectRejected(.unsupportedHeader, withTestCA, try Self.withHeader(jws) { $0["x5c"] = nil })
        let notification = try AppleFixtureFiles.text("appstoreserverlibrary-testca-signed-notification.jws")
        #expect(try withTestCA.verify(notification).environment == "Sandbox")
    }

    @Test("Xcode-signed data is refused unless test environments are allowed", .needsAppleFixtures)
    func xcode() throws {
        let jws = try AppleFixtureFiles.text("appstoreserverlibrary-xcode-signed-transaction.jws")
        Self.expectRejected(.testEnvironment, SignedDataVerifier(configuration: Self.offline), jws)
        let allowed = SignedDataVerifier(configuration: .init(onlineChecks: false, allowTestEnvironments: true))
        #expect(try allowed.verify(jws).environment == "Xcode")
    }

    @Test("a chain made here verifies with its root added; every way of breaking it is refused")
    func generatedChains() throws {
        let chain = try SigningChain()
        let payload = Data(#"{"transactionId":"1","signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#.utf8)
        let jws = try JWSSigner(chain: chain).sign(payload)
        let trusting = { (root: Certificate) in
            SignedDataVerifier(configuration: .init(rootCertificates: [root], onlineChecks: false))
        }
        #expect(try trusting(chain.root).verify(jws).payload == Array(payload))

        // A chain to another root.
        let other = try SigningChain()
        Self.expectRejected(.untrustedChain, trusting(chain.root), try JWSSigner(chain: other).sign(payload))
        // Apple's OIDs missing.
        var noLeafOID = SigningChain.Options()
        noLeafOID.leafOID = false
        let leafless = try SigningChain(noLeafOID)
        Self.expectRejected(.untrustedChain, trusting(leafless.root), try JWSSigner(chain: leafless).sign(payload))
        var noIntermediateOID = SigningChain.Options()
        noIntermediateOID.intermediateOID = false
        let bare = try SigningChain(noIntermediateOID)
        Self.expectRejected(.untrustedChain, trusting(bare.root), try JWSSigner(chain: bare).sign(payload))
        // alg none and HS256, and x5c of 1 or 4 certificates.
        Self.expectRejected(.unsupportedHeader, trusting(chain.root), try Self.withHeader(jws) { $0["alg"] = "none" })
        Self.expectRejected(.unsupportedHeader, trusting(chain.root), try Self.withHeader(jws) { $0["alg"] = "HS256" })
        Self.expectRejected(.unsupportedHeader, trusting(chain.root), try Self.withHeader(jws) {
            $0["x5c"] = Array(($0["x5c"] as? [String] ?? []).prefix(1))
        })
        Self.expectRejected(.unsupportedHeader, trusting(chain.root), try Self.withHeader(jws) {
            let x5c = $0["x5c"] as? [String] ?? []
            $0["x5c"] = x5c + [x5c[2]]
        })
        // A 10 MB input, and things that are not a JWS at all.
        Self.expectRejected(.malformed, trusting(chain.root), String(repeating: "a", count: 10 * 1024 * 1024))
        Self.expectRejected(.malformed, trusting(chain.root), "a.b")
        Self.expectRejected(.malformed, trusting(chain.root), "")
        Self.expectRejected(.malformed, trusting(chain.root), "e30.bm90IGpzb24.c2ln")
    }

    @Test("an expired leaf: refused online (now), accepted offline at a signedDate inside its validity")
    func expiredLeaf() throws {
        var options = SigningChain.Options()
        options.leafValidFrom = Date(timeIntervalSinceNow: -30 * 86_400)
        options.leafValidUntil = Date(timeIntervalSinceNow: -10 * 86_400)
        let chain = try SigningChain(options)
        let signedAt = Int64(Date(timeIntervalSinceNow: -20 * 86_400).timeIntervalSince1970 * 1000)
        let jws = try JWSSigner(chain: chain).sign(Data(#"{"signedDate":\#(signedAt)}"#.utf8))
        let offline = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        #expect(try offline.verify(jws).signedDateMs == signedAt)
        let online = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: Self.unreachable
        )
        Self.expectRejected(.untrustedChain, online, jws)
        // Signed after the leaf expired: refused offline too.
        let late = try JWSSigner(chain: chain).sign(
            Data(#"{"signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#.utf8)
        )
        Self.expectRejected(.untrustedChain, offline, late)
    }

    @Test("many threads missing the cache at once all get their answer (the chain is validated once, off their threads)")
    func coldCacheUnderLoad() throws {
        let chain = try SigningChain()
        let signer = try JWSSigner(chain: chain)
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let tokens = try (0..<256).map { try signer.sign(Data(#"{"transactionId":"\#($0)","signedDate":\#(now)}"#.utf8)) }
        let verified = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: tokens.count) { index in
            if (try? verifier.verify(tokens[index])) != nil { verified.withLock { $0 += 1 } }
        }
        #expect(verified.withLock { $0 } == tokens.count)
    }

    @Test("online checks whose OCSP responder cannot be reached are retryable, not a rejection")
    func ocspUnreachable() throws {
        var options = SigningChain.Options()
        options.leafOCSPURL = "http://127.0.0.1:9/ocsp"
        options.intermediateOCSPURL = "http://127.0.0.1:9/ocsp"
        let chain = try SigningChain(options)
        let jws = try JWSSigner(chain: chain).sign(
            Data(#"{"signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#.utf8)
        )
        let online = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: Self.unreachable
        )
        let error = #expect(throws: SignedDataError.self) { try online.verify(jws) }
        #expect(error?.code == .revocationUnavailable)
        #expect(error?.isRetryable == true)
    }
}
