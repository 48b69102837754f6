import Foundation

/// What the verifier reads from a payload before it is trusted: its signedDate (the offline validation time) and its
/// environment (Xcode and LocalTesting data is not signed by the App Store). Transactions and renewal info carry
/// both at the top level, notifications carry the environment in `data`.
struct PayloadFacts: Decodable {
    var signedDateMs: Int64?
    var environment: String?

    private enum CodingKeys: String, CodingKey { case signedDate, environment, data }
    private struct Nested: Decodable { var environment: String? }

    init(_ payload: [UInt8]) throws(SignedDataError) {
        do {
            self = try JSONDecoder().decode(PayloadFacts.self, from: Data(payload))
        } catch {
            throw SignedDataError(.malformed, "the JWS payload is not a JSON object as Apple signs it")
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Xcode writes milliseconds with a fraction.
        signedDateMs = try container.decodeIfPresent(Double.self, forKey: .signedDate).map { Int64($0.rounded(.down)) }
        environment =
            try container.decodeIfPresent(String.self, forKey: .environment)
            ?? container.decodeIfPresent(Nested.self, forKey: .data)?.environment
    }
}
