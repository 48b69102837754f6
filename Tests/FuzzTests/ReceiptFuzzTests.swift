import AppleFixtureFiles
@testable import AppReceipt
import AppStoreClient
import AppStoreModel
import Foundation
import Testing

/// App receipts (PKCS#7 and the ASN.1 payload inside) and verifyReceipt answers: at least 100,000 mutated inputs
/// each, from the real receipts and answer in ../shared/fixtures/apple.
@Suite("Fuzz: app receipts and verifyReceipt", .needsAppleFixtures)
struct ReceiptFuzzTests {
    enum ReceiptInput {
        case base64(String)
        case container([UInt8])
        case payload([UInt8])

        var bytes: [UInt8] {
            switch self {
            case .base64(let text): Array(text.utf8)
            case .container(let bytes), .payload(let bytes): bytes
            }
        }
    }

    @Test("app receipts: every mutated receipt decodes or is refused with AppReceiptError")
    func appReceipts() throws {
        let texts = try FuzzSeeds.receiptFiles.map(FuzzSeeds.receiptText)
        let containers = try FuzzSeeds.receiptFiles.map(FuzzSeeds.receiptContainer)
        let large = try FuzzSeeds.receiptContainer(FuzzSeeds.largeReceiptFile)
        let payloads = try FuzzSeeds.receiptFiles.map(FuzzSeeds.receiptPayload) + FuzzSeeds.syntheticPayloads()
        // The seeds themselves decode: the mutations start from documents the decoder reads to the end.
        for container in containers + [large] { _ = try AppReceipt.decode(pkcs7: container) }
        for payload in payloads { _ = try AppReceipt.decode(payload: payload[...]) }

        let textMutator = JSONMutator(seeds: texts.map { Array($0.utf8) })
        let containerMutator = DERMutator(seeds: containers)
        let largeMutator = DERMutator(seeds: [large])
        let payloadMutator = DERMutator(seeds: payloads)
        _ = FuzzRun.run(
            "app receipt",
            make: { random -> ReceiptInput in
                switch random.below(100) {
                case ..<4: .base64(String(decoding: textMutator.mutate(using: &random), as: UTF8.self))
                case ..<6: .container(largeMutator.mutate(using: &random))
                case ..<30: .container(containerMutator.mutate(using: &random))
                default: .payload(payloadMutator.mutate(using: &random))
                }
            },
            bytes: \.bytes,
            decode: { input, tally in
                do throws(AppReceiptError) {
                    let receipt: AppReceipt
                    switch input {
                    case .base64(let text): receipt = try AppReceipt.decode(base64: text)
                    case .container(let bytes): receipt = try AppReceipt.decode(pkcs7: bytes)
                    case .payload(let bytes): receipt = try AppReceipt.decode(payload: bytes[...])
                    }
                    // What the fake App Store answers from it.
                    _ = receipt.purchases.map(\.transaction)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }

    @Test("verifyReceipt answers: every mutated answer is interpreted (a verdict, or retryable), never a trap")
    func verifyReceiptAnswers() throws {
        let (full, small) = try FuzzSeeds.verifyReceiptResponses()
        for seed in [full, small[0], small[1]] {
            let step = AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: seed, endpoint: .production)
            guard case .done(.receipt(let contents, 0)) = step, !contents.entries.isEmpty else {
                throw SeedError("a seed is not read as an accepted receipt: \(step)")
            }
        }
        let fullMutator = JSONMutator(seeds: [full])
        let smallMutator = JSONMutator(seeds: small)
        _ = FuzzRun.run(
            "verifyReceipt answer",
            make: { random in
                random.chance(3) ? fullMutator.mutate(using: &random) : smallMutator.mutate(using: &random)
            },
            bytes: { $0 },
            decode: { body, tally in
                // Apple's JSON read (JSONScanner, and JSONDecoder where it declines) and interpreted: the
                // receipt's purchases normalised for the rules, or a status, or a retryable unreadable answer.
                switch AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: body, endpoint: .production) {
                case .done(.receipt(let contents, _)):
                    _ = contents.entries.count
                    tally.decoded += 1
                case .done(.retryable(let failure)) where failure.cause == .unreadableBody:
                    tally.refused += 1
                default:
                    tally.decoded += 1  // a status Apple may send: read, and given its meaning
                }
            }
        )
    }
}
