import AppReceipt
import AppStoreSignedData
import AppleFixtureFiles
import Crypto
import FakeAppStore
import Foundation
import Testing
import X509

/// App receipts' PKCS#7 signatures (issue 22, attack 8): Apple's real receipts verify to the pinned Apple Root CA at
/// their creation date; a receipt with a changed byte, a changed signature, or re-signed by any other chain does not.
@Suite("App receipt signatures")
struct ReceiptSignatureTests {
    /// Apple's real receipts: production (WWDR G5, SHA-256), sandbox (G5), legacy sandbox and RevenueCat's sandbox
    /// receipt (the original WWDR, SHA-1, signers long expired).
    static let realReceipts = [
        "tpinappreceipt-production-receipt.b64", "tpinappreceipt-sandbox-g5-receipt.b64",
        "tpinappreceipt-sandbox-legacy-receipt.b64", "revenuecat-sandbox-receipt.b64",
    ]

    /// RSA chains shaped and named like Apple's, made once per test process (RSA key generation is slow); the forger's
    /// signer is valid since 2010, so it covers the real receipts' creation dates.
    static let forger = Result {
        var options = ReceiptSigningChain.Options()
        options.leafValidFrom = Date(timeIntervalSince1970: 1_262_304_000)
        return try ReceiptSigningChain(options)
    }
    static let withoutLeafOID = Result {
        var options = ReceiptSigningChain.Options()
        options.leafOID = false
        return try ReceiptSigningChain(options)
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        try #require(Base64Text.decode(try AppleFixtureFiles.text(name)))
    }

    static func code(_ body: () throws -> Void) -> ReceiptSignatureError.Code? {
        do {
            try body()
            return nil
        } catch let error as ReceiptSignatureError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test("the pinned Apple Root CA is Apple's published one, and the root every real receipt carries", .needsAppleFixtures)
    func pinnedRoot() throws {
        let fingerprint = SHA256.hash(data: AppleIncRootCertificate.der).map { String(format: "%02x", $0) }.joined()
        #expect(fingerprint == "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024")
        #expect(fingerprint == AppleIncRootCertificate.sha256Fingerprint)
        #expect(AppleIncRootCertificate.certificate.subject == AppleIncRootCertificate.certificate.issuer)
        for name in Self.realReceipts {
            let der = try Self.bytes(name)
            #expect(
                der.firstRange(of: AppleIncRootCertificate.der) != nil, "\(name) carries Apple Root CA byte for byte"
            )
        }
    }

    @Test("Apple's real receipts verify at their creation date and read as the unverified decoder reads them", .needsAppleFixtures)
    func realReceiptsVerify() throws {
        let verifier = ReceiptSignatureVerifier()
        for name in Self.realReceipts {
            let text = try AppleFixtureFiles.text(name)
            let verified = try verifier.verifiedReceipt(base64: text)
            #expect(verified == (try AppReceipt.decode(base64: text)), "\(name)")
            #expect(!verified.purchases.isEmpty, "\(name)")
            // Again, from the chain cache.
            #expect(try verifier.verifiedReceipt(base64: text) == verified, "\(name)")
        }
    }

    @Test("a real receipt with one byte of its content changed does not verify", .needsAppleFixtures)
    func alteredContent() throws {
        for name in Self.realReceipts {
            var der = try Self.bytes(name)
            let receipt = try AppReceipt.decode(pkcs7: der)
            let bundle = Array(try #require(receipt.bundleId).utf8)
            let at = try #require(der.firstRange(of: bundle)).lowerBound
            der[at] ^= 0x01
            // Still a receipt, still readable, with another bundle id: only the signature tells.
            #expect(try AppReceipt.decode(pkcs7: der).bundleId != receipt.bundleId)
            #expect(Self.code { _ = try ReceiptSignatureVerifier().verifiedReceipt(pkcs7: der) } == .badSignature, "\(name)")
        }
    }

    @Test("a real receipt with one byte of its signature changed does not verify", .needsAppleFixtures)
    func alteredSignature() throws {
        for name in Self.realReceipts {
            var der = try Self.bytes(name)
            // The signature is the last field of the last signer info: the receipt's last bytes.
            der[der.count - 1] ^= 0x01
            #expect(Self.code { _ = try ReceiptSignatureVerifier().verifiedReceipt(pkcs7: der) } == .badSignature, "\(name)")
        }
    }

    @Test("a real receipt's payload re-signed by a chain that copies Apple's names and OIDs does not verify", .needsAppleFixtures)
    func reSigned() throws {
        let chain = try Self.forger.get()
        for name in Self.realReceipts {
            let original = try AppReceipt.decode(base64: try AppleFixtureFiles.text(name))
            var signer = ReceiptSigner(chain: chain)
            signer.options.digest = name.contains("revenuecat") ? .sha1 : .sha256
            let forged = try signer.pkcs7(original)
            #expect(Self.code { _ = try ReceiptSignatureVerifier().verifiedReceipt(pkcs7: forged) } == .untrustedChain)
            // The same bytes verify for a verifier that trusts that root: the root was the only thing wrong.
            let trusting = ReceiptSignatureVerifier(rootCertificates: [chain.root])
            #expect(try trusting.verifiedReceipt(pkcs7: forged) == original)
        }
    }

    @Test("Xcode's StoreKit-testing receipts (self-signed) never verify", .needsAppleFixtures)
    func xcodeReceipts() throws {
        for name in ["tpinappreceipt-xcode-receipt.b64", "appstoreserverlibrary-xcode-receipt-with-transaction.b64"] {
            let text = try AppleFixtureFiles.text(name)
            #expect(Self.code { _ = try ReceiptSignatureVerifier().verifiedReceipt(base64: text) } == .untrustedChain)
        }
    }

    static func receipt(createdAgo seconds: Double = 60, transactionId: String = "2000000123456789") -> AppReceipt {
        AppReceipt(
            environment: "Production", bundleId: "com.example.app", applicationVersion: "1",
            creationDate: Int64((Date().timeIntervalSince1970 - seconds) * 1000),
            purchases: [
                AppReceiptPurchase(
                    quantity: 1, productId: "pro.monthly", transactionId: transactionId,
                    originalTransactionId: transactionId, purchaseDate: Int64(Date().timeIntervalSince1970 * 1000)
                ),
            ]
        )
    }

    @Test("a trusted chain verifies with SHA-1 and SHA-256, with and without signed attributes")
    func trustedChainVariants() throws {
        let chain = try Self.forger.get()
        let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        let receipt = Self.receipt()
        for digest in [ReceiptSigner.DigestAlgorithm.sha1, .sha256] {
            for signedAttributes in [false, true] {
                var signer = ReceiptSigner(chain: chain)
                signer.options.digest = digest
                signer.options.signedAttributes = signedAttributes
                let verified = try verifier.verifiedReceipt(pkcs7: try signer.pkcs7(receipt))
                #expect(verified.purchases.map(\.transactionId) == ["2000000123456789"])
            }
        }
    }

    @Test("with signed attributes, changed content fails on the message digest (the signature over them still holds)")
    func messageDigest() throws {
        let chain = try Self.forger.get()
        var signer = ReceiptSigner(chain: chain)
        signer.options.signedAttributes = true
        var der = try signer.pkcs7(Self.receipt(transactionId: "2000000111111111"))
        let at = try #require(der.firstRange(of: Array("2000000111111111".utf8))).lowerBound
        der[at + 15] = UInt8(ascii: "2")  // the victim's id, 2000000111111112
        let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: der) } == .digestMismatch)
    }

    @Test("the chain is checked at the receipt's creation date: outside the signer's validity, refused")
    func creationDate() throws {
        var options = ReceiptSigningChain.Options()
        options.leafValidFrom = Date(timeIntervalSinceNow: -86_400)
        options.leafValidUntil = Date(timeIntervalSinceNow: 86_400)
        let chain = try ReceiptSigningChain(options)
        let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        let signer = ReceiptSigner(chain: chain)
        _ = try verifier.verifiedReceipt(pkcs7: try signer.pkcs7(Self.receipt(createdAgo: 60)))
        // Created before the signer's certificate existed; then after it expired (clamped to now, still refused once
        // now is past it: here, a receipt dated in two days is checked at now and verifies).
        let early = try signer.pkcs7(Self.receipt(createdAgo: 3 * 86_400))
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: early) } == .untrustedChain)
        let late = try signer.pkcs7(Self.receipt(createdAgo: -2 * 86_400))
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: late, now: Date(timeIntervalSinceNow: 3 * 86_400)) }
            == .untrustedChain)
        _ = try verifier.verifiedReceipt(pkcs7: late)
    }

    @Test("a trusted root is not enough: the signer needs Apple's receipt-signing OID")
    func leafOID() throws {
        let chain = try Self.withoutLeafOID.get()
        let der = try ReceiptSigner(chain: chain).pkcs7(Self.receipt())
        let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: der) } == .untrustedChain)
    }

    @Test("made-up receipts: no signer, a garbage signature, not PKCS#7")
    func madeUp() throws {
        let chain = try Self.forger.get()
        let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        var der = try ReceiptSigner(chain: chain).pkcs7(Self.receipt())
        for index in (der.count - 256)..<der.count { der[index] = UInt8.random(in: 0...255) }
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: der) } == .badSignature)
        #expect(Self.code { _ = try verifier.verifiedReceipt(base64: "not a receipt") } == .malformed)
        #expect(Self.code { _ = try verifier.verifiedReceipt(pkcs7: try ReceiptSigner.payload(Self.receipt())) }
            == .malformed)
    }
}
