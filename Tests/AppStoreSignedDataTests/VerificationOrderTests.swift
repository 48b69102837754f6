import AppleFixtureFiles
import Crypto
import FakeAppStore
import Foundation
import Synchronization
import SwiftASN1
import Testing
import X509

@testable import AppStoreSignedData

/// The order of the checks and what the chain cache holds: the signature with the leaf's key before the chain and
/// OCSP; chains cached by their certificates' bytes, the least recently used evicted; OCSP answers other than good
/// or revoked retryable; online checks never skipped.
@Suite("Signed data: verification order and the chain cache")
struct VerificationOrderTests {
    /// An OCSP client that counts its calls and answers `answer` (throws: unreachable).
    final class CountingOCSP: Sendable {
        let calls = Mutex(0)
        let answer: @Sendable () throws -> [UInt8]

        init(answer: @escaping @Sendable () throws -> [UInt8] = { throw Unreachable() }) { self.answer = answer }

        var client: OCSPClient {
            OCSPClient { [self] _, _ in
                calls.withLock { $0 += 1 }
                return try answer()
            }
        }

        var count: Int { calls.withLock { $0 } }
    }

    struct Unreachable: Error {}

    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A chain whose leaf and intermediate name an OCSP responder (never reached: the clients here answer).
    static func onlineChain() throws -> SigningChain {
        var options = SigningChain.Options()
        options.leafOCSPURL = "http://127.0.0.1:9/leaf"
        options.intermediateOCSPURL = "http://127.0.0.1:9/intermediate"
        return try SigningChain(options)
    }

    /// `payload` signed by `chain`'s leaf under a header with `extra` members besides alg and x5c.
    static func sign(_ chain: SigningChain, _ payload: String, extra: [String: Any] = [:]) throws -> String {
        let certificates = try [chain.leaf, chain.intermediate, chain.root].map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        var header: [String: Any] = ["alg": "ES256", "x5c": certificates]
        header.merge(extra) { _, new in new }
        let input = JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
            + "." + JWSSigner.base64URL(Data(payload.utf8))
        let signature = try chain.leafKey.signature(for: Data(input.utf8))
        return input + "." + JWSSigner.base64URL(signature.rawRepresentation)
    }

    /// The JWS with one byte of its signature changed.
    static func flipSignatureByte(_ jws: String) throws -> String {
        let parts = jws.split(separator: ".").map(String.init)
        var signature = try #require(Base64URL.decode(Substring(parts[2])))
        signature[10] ^= 0x01
        return parts[0] + "." + parts[1] + "." + JWSSigner.base64URL(signature)
    }

    static func payload(_ extra: String = "") -> String {
        #"{"transactionId":"1","environment":"Production","signedDate":\#(nowMs)\#(extra)}"#
    }

    @Test("a changed signature byte is badSignature at once, online, with no OCSP call (the signature comes first)")
    func signatureFirst() throws {
        let chain = try Self.onlineChain()
        let ocsp = CountingOCSP()
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: ocsp.client
        )
        let jws = try Self.sign(chain, Self.payload())
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(try Self.flipSignatureByte(jws)) }
        #expect(error?.code == .badSignature, "\(String(describing: error))")
        #expect(ocsp.count == 0, "the chain and OCSP come after the signature")
        // The genuine one reaches OCSP (unreachable here): retryable.
        let unreachable = #expect(throws: SignedDataError.self) { try verifier.verify(jws) }
        #expect(unreachable?.code == .revocationUnavailable)
        #expect(ocsp.count > 0)
    }

    @Test("real Apple data with one signature byte changed: badSignature online, before any OCSP", .needsAppleFixtures)
    func appleSignatureFirst() throws {
        let jws = try AppleFixtureFiles.appleTestNotification()
        let ocsp = CountingOCSP()
        let verifier = SignedDataVerifier(configuration: .init(onlineChecks: true), ocsp: ocsp.client)
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(try Self.flipSignatureByte(jws)) }
        #expect(error?.code == .badSignature, "\(String(describing: error))")
        #expect(ocsp.count == 0)
    }

    @Test("headers differing only in an extra member share one cache entry: one validation for 100 of them")
    func cacheKeyedByCertificates() throws {
        let chain = try SigningChain()
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        for index in 0..<100 {
            let jws = try Self.sign(chain, Self.payload(), extra: ["nonce": UUID().uuidString, "n": index])
            #expect(try verifier.verify(jws).isSigned)
        }
        #expect(verifier.chains.count == 1)
        #expect(verifier.chains.validations == 1)
        // A header whose x5c root is another one's (never trusted for being there) is the same chain too.
        let other = try SigningChain()
        let certificates = try [chain.leaf, chain.intermediate, other.root].map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        #expect(try verifier.verify(try Self.sign(chain, Self.payload(), extra: ["x5c": certificates])).isSigned)
        #expect(verifier.chains.validations == 1)
    }

    @Test("a full cache evicts the least recently used chain: a hot one stays")
    func leastRecentlyUsed() throws {
        let chains = try (0..<6).map { _ in try SigningChain() }
        let trusting = SignedDataVerifier(
            configuration: .init(rootCertificates: chains.map(\.root), onlineChecks: false), cachedChains: 3
        )
        let hot = chains[0]
        func key(_ chain: SigningChain) throws -> ChainCache.Key {
            var leaf = DER.Serializer()
            try leaf.serialize(chain.leaf)
            var intermediate = DER.Serializer()
            try intermediate.serialize(chain.intermediate)
            return ChainCache.Key(leaf: leaf.serializedBytes, intermediate: intermediate.serializedBytes)
        }
        for cold in chains.dropFirst() {
            _ = try trusting.verify(try Self.sign(hot, Self.payload()))
            _ = try trusting.verify(try Self.sign(cold, Self.payload()))
            #expect(trusting.chains.count <= 3)
            #expect(trusting.chains.contains(try key(hot)), "the hot chain was evicted")
        }
        #expect(trusting.chains.count == 3)
        #expect(trusting.chains.validations == 6, "each chain validated once")
        #expect(!trusting.chains.contains(try key(chains[1])), "the least recently used went first")
    }

    /// OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED, ... } with no response bytes.
    static func status(_ value: UInt8) -> [UInt8] { [0x30, 0x03, 0x0A, 0x01, value] }

    @Test(
        "OCSP answers other than good or revoked give no verdict (retryable), each of them",
        arguments: [
            ("malformedRequest", status(1)), ("internalError", status(2)), ("tryLater", status(3)),
            ("sigRequired", status(5)), ("unauthorized", status(6)), ("not OCSP", Array("<html>".utf8)), ("empty", []),
        ]
    )
    func noVerdict(name: String, answer: [UInt8]) throws {
        let chain = try Self.onlineChain()
        let ocsp = CountingOCSP { answer }
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: ocsp.client
        )
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(try Self.sign(chain, Self.payload())) }
        #expect(error?.code == .revocationUnavailable, "\(name): \(String(describing: error))")
        #expect(error?.isRetryable == true)
        #expect(ocsp.count > 0)
    }

    @Test("online checks with no OCSP client fail closed: a valid chain is not accepted without its revocation check")
    func onlineWithoutOCSPClient() throws {
        let chain = try Self.onlineChain()
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: true))
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(try Self.sign(chain, Self.payload())) }
        #expect(error?.code == .revocationUnavailable, "\(String(describing: error))")
        #expect(verifier.chains.count == 0)
    }

    @Test("offline, a payload without signedDate (absent or null) has no validation time: malformed")
    func offlineWithoutSignedDate() throws {
        let chain = try SigningChain()
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        for payload in [#"{"transactionId":"1","environment":"Production"}"#, #"{"signedDate":null}"#] {
            let error = #expect(throws: SignedDataError.self) { try verifier.verify(try Self.sign(chain, payload)) }
            #expect(error?.code == .malformed, "\(payload): \(String(describing: error))")
            #expect(error?.message.contains("signedDate") == true)
        }
    }
}
