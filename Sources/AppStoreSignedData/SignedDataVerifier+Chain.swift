import Crypto
import Foundation
@_spi(FixedExpiryValidationTime) import X509

extension SignedDataVerifier {
    /// Makes sure the chain of `leaf` (whose key already checked the signature) is valid for `validationTime`:
    /// from the cache, from a validation another caller is making of the same chain, or validated here.
    func chain(
        _ key: ChainCache.Key, leaf: Certificate, publicKey: P256.Signing.PublicKey, intermediateDER: [UInt8],
        validationTime: Date, now: Date
    ) throws(SignedDataError) {
        let usable = { (chain: VerifiedChain) in self.usable(chain, validationTime: validationTime, now: now) }
        while true {
            switch chains.claim(key, usable: usable) {
            case .cached:
                return
            case .wait(let validation):
                // Online, the other caller asked OCSP at about the same moment: its failure is this caller's too.
                // Offline, its validation time was its own payload's: look again (the cache, or validate here).
                if case .failure(let error) = validation.wait(), configuration.onlineChecks { throw error }
            case .validate(let validation):
                let result = Result { () throws(SignedDataError) -> VerifiedChain in
                    let intermediate: Certificate
                    do {
                        intermediate = try Certificate(derEncoded: intermediateDER)
                    } catch {
                        throw SignedDataError(.malformed, "the intermediate certificate in x5c does not parse: \(error)")
                    }
                    let chain = try validate(leaf: leaf, intermediate: intermediate, validationTime: validationTime, now: now)
                    return VerifiedChain(
                        publicKey: publicKey,
                        validFrom: chain.map(\.notValidBefore).max() ?? validationTime,
                        validUntil: chain.map(\.notValidAfter).min() ?? validationTime,
                        checkedOnlineAt: configuration.onlineChecks ? now : nil
                    )
                }
                chains.finish(key, validation, result)
                _ = try result.get()
                return
            }
        }
    }

    /// RFC 5280 path validation to a configured root, Apple's OIDs, and with online checks OCSP: swift-certificates'
    /// verifier, which is asynchronous, run to completion from this synchronous caller.
    func validate(
        leaf: Certificate, intermediate: Certificate, validationTime: Date, now: Date
    ) throws(SignedDataError) -> ValidatedCertificateChain {
        let roots = configuration.rootCertificates
        var requester: OCSPClient?
        if configuration.onlineChecks {
            guard let ocsp else {
                throw SignedDataError(.revocationUnavailable, "online checks are on but no OCSP client was given")
            }
            requester = ocsp
        }
        let path: [Certificate]
        do {
            path = try ChainSearch.path(from: leaf, through: [leaf, intermediate], limits: configuration.chainLimits)
        } catch {
            throw SignedDataError(.untrustedChain, "the x5c certificates are refused: \(error)")
        }
        let outcome = ChainSearch.validate(intermediates: path, limits: configuration.chainLimits) {
            [requester] intermediates in
            var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy(fixedExpiryValidationTime: validationTime)
                AppStoreOIDPolicy()
                if let requester {
                    AppStoreOCSPPolicy(requester: requester, validationTime: now)
                }
            }
            return await verifier.validate(leaf: leaf, intermediates: intermediates)
        }
        switch outcome {
        case .valid(let chain):
            return chain
        case .cutShort(let spent):
            throw SignedDataError(.untrustedChain, "the certificate chain was not found: \(spent)")
        case .invalid(let failures):
            let reasons = failures.map { String(describing: $0.policyFailureReason) }
            if !reasons.isEmpty, reasons.allSatisfy({ $0.hasPrefix(AppStoreOCSPPolicy.noVerdict) }) {
                throw SignedDataError(
                    .revocationUnavailable, "the revocation check (OCSP) gave no verdict: \(reasons.joined(separator: "; "))"
                )
            }
            let detail = reasons.isEmpty ? "no path to a trusted root" : reasons.joined(separator: "; ")
            throw SignedDataError(.untrustedChain, "the certificate chain is not trusted: \(detail)")
        }
    }
}
