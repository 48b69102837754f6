import AppReceipt
@testable import AppStoreSignedData
import Crypto
import FakeAppStore
import Foundation
import Synchronization
import Testing
import ThreadSupport
import X509

/// Issue 36, attack 1: a receipt signed by the attacker's own key and carrying K·(K−1) cross-signed CAs that share one
/// subject made swift-certificates' path search try every simple path (K = 7: 17 s; K = 9: hours), on the one thread
/// every chain check shared. Every bound below is checked by a test that fails without it; the suite's time limit
/// fails a search that is no longer bounded at all.
@Suite("Chain search bounds", .timeLimit(.minutes(1)))
struct ChainSearchTests {
    static let loop9 = Result { try CrossSignedLoop(size: 9) }
    static let loop6 = Result { try CrossSignedLoop(size: 6) }

    static func code(_ body: () throws -> Void) -> (ReceiptSignatureError.Code, String)? {
        do {
            try body()
            return nil
        } catch let error as ReceiptSignatureError {
            return (error.code, error.message)
        } catch {
            return nil
        }
    }

    @Test("the attack itself (K = 9, 72 look-alike CAs, about 25 KB): refused as untrustedChain before any search")
    func loopReceipt() throws {
        let loop = try Self.loop9.get()
        let der = try loop.receiptSigner.pkcs7(ReceiptSignatureTests.receipt())
        #expect(der.count < 40_000, "the attack fits far under the receipt size limit: \(der.count) bytes")
        // The attacker's signature over the content is good: only the chain can refuse it.
        let verifier = ReceiptSignatureVerifier()
        let started = ContinuousClock.now
        let refused = try #require(Self.code { _ = try verifier.verifiedReceipt(pkcs7: der) })
        #expect(refused.0 == .untrustedChain)
        #expect(refused.1.contains("73 certificates"), "\(refused.1)")
        print("K = 9 loop receipt refused in \(ContinuousClock.now - started)")
    }

    @Test("two certificates with one subject are refused, even within the certificate cap")
    func repeatedSubject() throws {
        let loop = try Self.loop9.get()
        var signer = loop.receiptSigner
        // The signer and two of the loop: within the cap of four, and enough to make the search branch.
        signer.options.certificates = [loop.signer, loop.certificates[0], loop.certificates[1]]
        let der = try signer.pkcs7(ReceiptSignatureTests.receipt())
        let refused = try #require(Self.code { _ = try ReceiptSignatureVerifier().verifiedReceipt(pkcs7: der) })
        #expect(refused.0 == .untrustedChain)
        #expect(refused.1.contains("same subject"), "\(refused.1)")
    }

    @Test("the path is the signer's issuers by name: a certificate off it is never handed to the search")
    func pathByName() throws {
        let chain = try ReceiptSignatureTests.forger.get()
        let loop = try Self.loop9.get()
        let limits = ChainSearch.Limits()
        let path = try ChainSearch.path(
            from: chain.leaf, through: [chain.leaf, loop.certificates[0], chain.intermediate, chain.root], limits: limits
        )
        #expect(path == [chain.intermediate], "the root the input carries is not on the path: never trusted as such")
        // A receipt carrying a stray certificate besides Apple's three still verifies: the stray one is not searched.
        var signer = ReceiptSigner(chain: chain)
        signer.options.certificates = [chain.leaf, loop.certificates[0], chain.intermediate, chain.root]
        let trusting = ReceiptSignatureVerifier(rootCertificates: [chain.root])
        let verified = try trusting.verifiedReceipt(pkcs7: try signer.pkcs7(ReceiptSignatureTests.receipt()))
        #expect(verified.purchases.count == 1)
    }

    /// swift-certificates' verifier over `intermediates`, to a root that issued none of them, with `limits`.
    static func search(_ intermediates: [Certificate], leaf: Certificate, limits: ChainSearch.Limits) throws
        -> ChainSearch.Outcome
    {
        let root = try ReceiptSignatureTests.forger.get().root
        return ChainSearch.validate(intermediates: intermediates, limits: limits) { store in
            var verifier = Verifier(rootCertificates: CertificateStore([root])) { RFC5280Policy() }
            return await verifier.validate(leaf: leaf, intermediates: store)
        }
    }

    @Test("the search itself stops after its issuer look-ups (K = 6 handed over whole: seconds without the bound)")
    func lookupBudget() throws {
        let loop = try Self.loop6.get()
        let limits = ChainSearch.Limits(maximumCertificates: .max, maximumLookups: 8, timeLimit: .seconds(3600))
        let outcome = try Self.search(loop.certificates, leaf: loop.signer, limits: limits)
        guard case .cutShort(let spent) = outcome else {
            Issue.record("the search was not cut short: \(outcome)")
            return
        }
        #expect(spent.contains("8 issuer look-ups"), "\(spent)")
    }

    @Test("the search itself stops at its time limit")
    func timeLimit() throws {
        let loop = try Self.loop6.get()
        let limits = ChainSearch.Limits(maximumCertificates: .max, maximumLookups: .max, timeLimit: .milliseconds(50))
        let outcome = try Self.search(loop.certificates, leaf: loop.signer, limits: limits)
        guard case .cutShort(let spent) = outcome else {
            Issue.record("the search was not cut short: \(outcome)")
            return
        }
        #expect(spent.contains("ran out"), "\(spent)")
    }

    @Test("a chain Apple's way spends one look-up and is valid; a failed chain with nowhere else to go is not cut short")
    func ordinaryChains() throws {
        let chain = try ReceiptSignatureTests.forger.get()
        let limits = ChainSearch.Limits(maximumCertificates: 4, maximumLookups: 1, timeLimit: .seconds(60))
        // `search` ends in the forger's root: its own chain validates, another root's is merely invalid.
        let valid = try Self.search([chain.intermediate], leaf: chain.leaf, limits: limits)
        guard case .valid = valid else {
            Issue.record("Apple's shape of chain did not validate with one look-up: \(valid)")
            return
        }
        let other = try ReceiptSigningChain()
        let invalid = try Self.search([other.intermediate], leaf: other.leaf, limits: limits)
        guard case .invalid = invalid else {
            Issue.record("an untrusted chain was reported as \(invalid), not invalid")
            return
        }
    }

    @Test("one validation that holds its thread holds up no other: each runs on a thread of its own")
    func ownThreads() throws {
        let release = ConditionLock(false)
        let held = ConditionLock(false)
        let blocker = try DedicatedThread.start(name: "held search") {
            _ = ChainSearch.validate(intermediates: [], limits: ChainSearch.Limits()) { _ in
                held.withLock { $0 = true }
                // Blocks its thread, as a CPU-bound search would.
                release.wait(until: { $0 })
                return .couldNotValidate([])
            }
        }
        defer {
            release.withLock { $0 = true }
            blocker.join()
        }
        #expect(held.wait(until: { $0 }, timeout: .seconds(30)), "the held validation started")
        let chain = try ReceiptSignatureTests.forger.get()
        let verified = ConditionLock(false)
        let other = try DedicatedThread.start(name: "other search") {
            let verifier = ReceiptSignatureVerifier(rootCertificates: [chain.root])
            if (try? verifier.verifiedReceipt(pkcs7: try ReceiptSigner(chain: chain).pkcs7(ReceiptSignatureTests.receipt()))) != nil {
                verified.withLock { $0 = true }
            }
        }
        let done = verified.wait(until: { $0 }, timeout: .seconds(30))
        #expect(done, "a receipt's chain was validated while another validation held its thread")
        #expect(held.withLock { $0 } && !release.withLock { $0 }, "the other validation was still held")
        release.withLock { $0 = true }
        other.join()
    }
}
