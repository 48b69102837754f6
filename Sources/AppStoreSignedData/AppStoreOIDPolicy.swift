import SwiftASN1
import X509

/// Apple's marks on an App Store signing chain: the intermediate carries the WWDR intermediate OID and the leaf the
/// App Store receipt-signing OID. A chain of any other length is refused.
struct AppStoreOIDPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "the chain has \(chain.count) certificates, not leaf, intermediate and root")
        }
        guard chain[1].extensions.contains(where: { $0.oid == SignedDataVerifier.intermediateOID }) else {
            return .failsToMeetPolicy(reason: "the intermediate certificate lacks Apple's OID 1.2.840.113635.100.6.2.1")
        }
        guard chain[0].extensions.contains(where: { $0.oid == SignedDataVerifier.leafOID }) else {
            return .failsToMeetPolicy(reason: "the leaf certificate lacks Apple's OID 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}
