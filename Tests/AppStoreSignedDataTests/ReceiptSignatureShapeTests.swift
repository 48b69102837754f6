import AppReceipt
import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing
import X509

/// The receipt CMS verifier's other refusals, each made by a receipt built here that is wrong in that one way and
/// otherwise signed by a chain the verifier trusts: no signer certificate, two, two signers, an algorithm that is not
/// Apple's, a payload that is not a receipt, and the signer and intermediate policies.
@Suite("App receipt signatures: every refusal")
struct ReceiptSignatureShapeTests {
    static let chain = ReceiptSignatureTests.forger

    static func refusal(
        _ der: [UInt8], roots: [Certificate]? = nil
    ) throws -> (code: ReceiptSignatureError.Code, message: String) {
        let verifier = ReceiptSignatureVerifier(rootCertificates: try roots ?? [chain.get().root])
        do {
            _ = try verifier.verifiedReceipt(pkcs7: der)
        } catch {
            return (error.code, error.message)
        }
        Issue.record("the receipt verified")
        return (.malformed, "")
    }

    @Test("the signer's certificate missing from the set, or there twice: signerNotFound")
    func signerCertificate() throws {
        let chain = try Self.chain.get()
        var signer = ReceiptSigner(chain: chain)
        signer.options.certificates = [chain.intermediate, chain.root]
        let missing = try Self.refusal(try signer.pkcs7(ReceiptSignatureTests.receipt()))
        #expect(missing.code == .signerNotFound)
        #expect(missing.message.contains("does not carry the certificate its signer names"), "\(missing.message)")

        signer.options.certificates = [chain.leaf, chain.leaf, chain.intermediate]
        let twice = try Self.refusal(try signer.pkcs7(ReceiptSignatureTests.receipt()))
        #expect(twice.code == .signerNotFound)
        #expect(twice.message.contains("2 certificates with the signer's issuer and serial number"), "\(twice.message)")
    }

    @Test("two signer infos: malformed, never 'the first one'")
    func twoSigners() throws {
        var signer = ReceiptSigner(chain: try Self.chain.get())
        signer.options.signerInfos = 2
        let refused = try Self.refusal(try signer.pkcs7(ReceiptSignatureTests.receipt()))
        #expect(refused.code == .malformed)
        #expect(refused.message.contains("2 signers, not one"), "\(refused.message)")
    }

    @Test("a digest other than SHA-1 or SHA-256 (here SHA-384, named everywhere the receipt names one): unsupportedAlgorithm")
    func otherDigest() throws {
        var der = try ReceiptSigner(chain: try Self.chain.get()).pkcs7(ReceiptSignatureTests.receipt())
        // 2.16.840.1.101.3.4.2.1 (SHA-256) → 2.16.840.1.101.3.4.2.2 (SHA-384): same length, last byte.
        let sha256: [UInt8] = [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
        var replaced = 0
        while let range = der.firstRange(of: sha256) {
            der[range.upperBound - 1] = 0x02
            replaced += 1
        }
        #expect(replaced == 2, "the SignedData's digest algorithms and the signer's")
        let refused = try Self.refusal(der)
        #expect(refused.code == .unsupportedAlgorithm)
        #expect(refused.message.contains("not RSA PKCS#1 v1.5 with SHA-1 or SHA-256"), "\(refused.message)")
    }

    @Test("signed content that is not a receipt, or a receipt without a creation date: badPayload")
    func notAReceipt() throws {
        let signer = ReceiptSigner(chain: try Self.chain.get())
        let text = try Self.refusal(try signer.pkcs7(payload: Array("not a receipt".utf8)))
        #expect(text.code == .badPayload)
        #expect(text.message.contains("not a receipt"), "\(text.message)")

        var undated = ReceiptSignatureTests.receipt()
        undated.creationDate = nil
        let refused = try Self.refusal(try signer.pkcs7(undated))
        #expect(refused.code == .badPayload)
        #expect(refused.message.contains("no creation date"), "\(refused.message)")
    }

    @Test("a signer that is a certificate authority, or whose key usage does not allow signatures: untrustedChain")
    func signerPolicy() throws {
        var authority = ReceiptSigningChain.Options()
        authority.leafIsCertificateAuthority = true
        var encipherOnly = ReceiptSigningChain.Options()
        encipherOnly.leafSigns = false
        for (options, expected) in [
            (authority, "the receipt signer is a certificate authority"),
            (encipherOnly, "the receipt signer's key usage does not allow signatures"),
        ] {
            let chain = try ReceiptSigningChain(options)
            let refused = try Self.refusal(
                try ReceiptSigner(chain: chain).pkcs7(ReceiptSignatureTests.receipt()), roots: [chain.root]
            )
            #expect(refused.code == .untrustedChain)
            #expect(refused.message.contains(expected), "\(refused.message)")
        }
    }

    @Test("an intermediate without Apple's WWDR OID: untrustedChain, though its root is trusted")
    func intermediateOID() throws {
        var options = ReceiptSigningChain.Options()
        options.intermediateOID = false
        let chain = try ReceiptSigningChain(options)
        let refused = try Self.refusal(
            try ReceiptSigner(chain: chain).pkcs7(ReceiptSignatureTests.receipt()), roots: [chain.root]
        )
        #expect(refused.code == .untrustedChain)
        #expect(refused.message.contains("1.2.840.113635.100.6.2.1"), "\(refused.message)")
    }
}
