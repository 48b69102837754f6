import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// OCSP for the leaf and the intermediate (swift-certificates' policy, hard failure), with its failures sorted: a
/// responder that says "revoked" rejects the chain; anything else that is not "good" (unreachable, tryLater,
/// internalError, malformedRequest, sigRequired, unauthorized, status unknown, an answer that does not parse or is
/// not signed by the issuer, the time budget spent) gives no verdict, marked so the verifier makes it retryable.
struct AppStoreOCSPPolicy: VerifierPolicy {
    /// Starts the reason of a failure that is no verdict on the chain.
    static let noVerdict = "OCSP gave no verdict"

    var verifyingCriticalExtensions: [ASN1ObjectIdentifier] { ocsp.verifyingCriticalExtensions }
    private var ocsp: OCSPVerifierPolicy<OCSPClient>

    init(requester: OCSPClient, validationTime: Date) {
        ocsp = OCSPVerifierPolicy(failureMode: .hard, requester: requester, fixedExpiryValidationTime: validationTime)
    }

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        switch await ocsp.chainMeetsPolicyRequirements(chain: chain) {
        case .meetsPolicy:
            return .meetsPolicy
        case .failsToMeetPolicy(let reason):
            let text = String(describing: reason)
            if text.hasPrefix("revoked through OCSP") { return .failsToMeetPolicy(reason: text) }
            return .failsToMeetPolicy(reason: "\(Self.noVerdict): \(text)")
        }
    }
}
