import AppReceipt
@testable import AppStoreSignedData
import Crypto
import FakeAppStore
import Foundation
import SwiftASN1
import Testing
import X509

/// The containers signed data comes in, up to and through the chain search (issue 36): app receipts' PKCS#7 and JWS
/// headers with their `x5c`, mutated from containers made here (so the suite needs no outside data), among them the
/// attack that made the chain search explode (72 cross-signed CAs sharing one subject) and a set that repeats a
/// subject within the certificate cap. Each mutated input is read, then verified to the end against a root the test
/// trusts: the JWS is signed again after its header was mutated, so mutated certificates reach the chain search
/// rather than failing at the signature.
@Suite("Fuzz: signed containers and their certificate chains")
struct SignedContainerFuzzTests {
    /// Fewer inputs than the decoders get: each one that reads goes on to RSA or ECDSA checks and a chain search on a
    /// thread of its own (about 1 ms apiece on two loaded cores, where a decoder's input costs microseconds).
    static let inputs = 30_000

    static let chain = Result { try ReceiptSigningChain() }
    static let jwsChain = Result { try SigningChain() }

    static func receipt() -> AppReceipt {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return AppReceipt(
            environment: "Production", bundleId: "com.example.app", applicationVersion: "1", creationDate: now - 60_000,
            purchases: [
                AppReceiptPurchase(
                    quantity: 1, productId: "pro.monthly", transactionId: "2000000123456789",
                    originalTransactionId: "2000000123456789", purchaseDate: now - 120_000
                ),
            ]
        )
    }

    static func receiptSeeds() throws -> [[UInt8]] {
        let chain = try chain.get()
        var seeds: [[UInt8]] = []
        for digest in [ReceiptSigner.DigestAlgorithm.sha1, .sha256] {
            for signedAttributes in [false, true] {
                var signer = ReceiptSigner(chain: chain)
                signer.options.digest = digest
                signer.options.signedAttributes = signedAttributes
                seeds.append(try signer.pkcs7(receipt()))
            }
        }
        let loop = try CrossSignedLoop(size: 9)
        seeds.append(try loop.receiptSigner.pkcs7(receipt()))
        var repeated = loop.receiptSigner
        repeated.options.certificates = [loop.signer, loop.certificates[0], loop.certificates[1]]
        seeds.append(try repeated.pkcs7(receipt()))
        return seeds
    }

    @Test("app receipts' PKCS#7: every mutated container is read and verified, or refused with ReceiptSignatureError")
    func receiptContainers() throws {
        let seeds = try Self.receiptSeeds()
        let verifier = ReceiptSignatureVerifier(rootCertificates: [try Self.chain.get().root])
        for seed in seeds.prefix(4) { _ = try verifier.verifiedReceipt(pkcs7: seed) }
        for seed in seeds.suffix(2) { _ = try ReceiptSignedData(pkcs7: seed, maximumCertificates: .max) }
        let mutator = DERMutator(seeds: seeds)
        let tally = FuzzRun.run(
            "receipt PKCS#7", count: Self.inputs, make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { der, tally in
                do throws(ReceiptSignatureError) {
                    _ = try ReceiptSignedData(pkcs7: der)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                    return
                }
                // Read: now the signer, the signature and the chain search.
                do throws(ReceiptSignatureError) {
                    _ = try verifier.verifiedReceipt(pkcs7: der)
                } catch {
                    _ = error.code
                }
            }
        )
        #expect(tally.refused > 0)
    }

    static func base64(_ certificate: Certificate) throws -> String {
        var serializer = SwiftASN1.DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes).base64EncodedString()
    }

    static func headerSeeds() throws -> [[UInt8]] {
        let chain = try jwsChain.get()
        let loop = try CrossSignedLoop(size: 3)
        let apple = try [chain.leaf, chain.intermediate, chain.root].map(base64)
        let shapes: [[String: Any]] = [
            ["alg": "ES256", "x5c": apple],
            ["alg": "ES256", "x5c": apple, "kid": "extra", "typ": "JWT"],
            // The leaf, then an intermediate sharing the leaf's issuer name but not its key, then the root.
            ["alg": "ES256", "x5c": [apple[0], try base64(loop.certificates[0]), apple[2]]],
            ["alg": "ES256", "x5c": apple + [try base64(loop.certificates[1])]],
        ]
        return try shapes.map { Array(try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])) }
    }

    @Test("JWS headers and their x5c: every mutated header, signed again, is verified or refused with SignedDataError")
    func jwsHeaders() throws {
        let chain = try Self.jwsChain.get()
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        let payload = Base64URL.encode(
            Data(#"{"transactionId":"1","environment":"Production","signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#.utf8)
        )
        let sign = { (header: [UInt8]) -> String in
            let input = Base64URL.encode(header) + "." + payload
            let signature = (try? chain.leafKey.signature(for: Data(input.utf8)))?.rawRepresentation ?? Data()
            return input + "." + Base64URL.encode(signature)
        }
        let seeds = try Self.headerSeeds()
        _ = try verifier.verify(sign(seeds[0]))
        let headerMutator = JSONMutator(seeds: seeds)
        // Certificates mutated as DER (inside their base64, where a JSON mutation seldom leaves one readable).
        let certificates = try [chain.leaf, chain.intermediate, chain.root].map { certificate in
            var serializer = SwiftASN1.DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        let certificateMutator = DERMutator(seeds: certificates)
        let apple = try [chain.leaf, chain.intermediate, chain.root].map(Self.base64)
        _ = FuzzRun.run(
            "JWS header", count: Self.inputs,
            make: { random -> String in
                if random.chance(50) { return sign(headerMutator.mutate(using: &random)) }
                var x5c = apple
                x5c[random.below(3)] = Data(certificateMutator.mutate(using: &random)).base64EncodedString()
                let header = (try? JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c])) ?? Data()
                return sign(Array(header))
            },
            bytes: { Array($0.utf8) },
            decode: { jws, tally in
                do throws(SignedDataError) {
                    _ = try verifier.verify(jws)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }
}
