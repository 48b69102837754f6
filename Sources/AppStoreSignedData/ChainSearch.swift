import Foundation
import Synchronization
import X509

/// The certificate path search every signed input's chain goes through (app receipts' PKCS#7, JWS `x5c`), bounded
/// so that no input can make it costly: swift-certificates' verifier tries every simple path through the
/// intermediates it is given, which for K cross-signed certificates sharing one subject is factorial in K (a 25 KB
/// receipt carrying 72 of them kept a thread busy for hours). Here:
/// - an input carrying more than `Limits.maximumCertificates` certificates is refused before any is looked at
///   (Apple's chains have three: signer, intermediate, root);
/// - two certificates with one subject are refused (Apple's never share one, and only such sets make the search
///   branch);
/// - the path is picked as Apple's chains are built, leaf → its issuer → root: the verifier is given only the
///   certificates met by following issuer names from the leaf, never the rest of the set;
/// - the search itself is cut short after `Limits.maximumLookups` issuer look-ups or `Limits.timeLimit` (each
///   look-up asks the budget first; the time counts from the first look-up), and a search cut short is a rejection,
///   never a retry. No input within the certificate cap reaches either bound (a path has at most three distinct
///   subjects): they hold the search if a check above is ever lost.
public enum ChainSearch {
    /// The bounds, one set for every kind of signed input.
    public struct Limits: Sendable, Hashable {
        /// The most certificates an input may carry.
        public var maximumCertificates: Int
        /// The most issuer look-ups one search may make (Apple's chain needs two).
        public var maximumLookups: Int
        /// How long one search may take, OCSP answers aside (each is bounded by its own time budget).
        public var timeLimit: Duration

        public init(maximumCertificates: Int = 4, maximumLookups: Int = 8, timeLimit: Duration = .seconds(10)) {
            self.maximumCertificates = maximumCertificates
            self.maximumLookups = maximumLookups
            self.timeLimit = timeLimit
        }
    }

    /// Why a set of certificates was refused before any search.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// The intermediates on the path from `leaf` through `certificates` (the input's own, untrusted), in order:
    /// each the one certificate whose subject is the previous one's issuer; the walk ends at a certificate that
    /// issued itself (a root, which is never trusted for being in the input) or at a name nothing in the set has.
    /// Refuses a set over the limit or with a repeated subject.
    static func path(
        from leaf: Certificate, through certificates: [Certificate], limits: Limits
    ) throws(Refusal) -> [Certificate] {
        guard certificates.count <= limits.maximumCertificates else {
            throw Refusal(
                description: "it carries \(certificates.count) certificates, more than the "
                    + "\(limits.maximumCertificates) considered (Apple's chains have three)"
            )
        }
        var bySubject: [DistinguishedName: Certificate] = [:]
        for certificate in certificates {
            if let other = bySubject[certificate.subject], other != certificate {
                throw Refusal(description: "two of its certificates have the same subject (\(certificate.subject))")
            }
            bySubject[certificate.subject] = certificate
        }
        var path: [Certificate] = []
        var tip = leaf
        while tip.issuer != tip.subject, let issuer = bySubject[tip.issuer], issuer != leaf,
            issuer.subject != issuer.issuer, !path.contains(issuer)
        {
            path.append(issuer)
            tip = issuer
        }
        return path
    }

    /// What a bounded validation came to.
    enum Outcome {
        case valid(ValidatedCertificateChain)
        case invalid([CertificateValidationResult.PolicyFailure])
        /// The search spent its budget before finding a valid chain: what was spent.
        case cutShort(String)
    }

    /// Runs `validate` (swift-certificates' verifier, with the caller's roots and policies) on a thread of its own,
    /// with `intermediates` behind a store that answers look-ups only while the budget lasts.
    static func validate(
        intermediates: [Certificate], limits: Limits,
        _ validate: @escaping @Sendable (CertificateStore) async -> CertificateValidationResult
    ) -> Outcome {
        let budget = Budget(limits)
        let store = CertificateStore(custom: BoundedIntermediates(intermediates, budget: budget))
        let result = BlockingAsync.run { await validate(store) }
        switch result {
        case .validCertificate(let chain):
            return .valid(chain)
        case .couldNotValidate(let failures):
            if let spent = budget.spent { return .cutShort(spent) }
            return .invalid(failures)
        }
    }

    /// Issuer look-ups left, and the time the search must end by; which of the two ran out first, once a look-up was
    /// refused for it.
    final class Budget: Sendable {
        private struct State {
            var lookupsLeft: Int
            var spent: String?
            /// Set by the first look-up: the time counts from the search's start, not from the caller's, so a
            /// thread slow to start (a loaded machine) never cuts a genuine chain's search short.
            var deadline: ContinuousClock.Instant?
        }

        private let state: Mutex<State>
        private let limits: Limits

        init(_ limits: Limits) {
            self.limits = limits
            state = Mutex(State(lookupsLeft: limits.maximumLookups))
        }

        /// Takes one look-up; false once the look-ups or the time are spent.
        func take() -> Bool {
            state.withLock { state in
                if state.spent != nil { return false }
                if state.lookupsLeft <= 0 {
                    state.spent = "the path search made its \(limits.maximumLookups) issuer look-ups"
                    return false
                }
                let now = ContinuousClock.now
                let deadline = state.deadline ?? now + limits.timeLimit
                state.deadline = deadline
                if now >= deadline {
                    state.spent = "the path search ran out of its \(limits.timeLimit)"
                    return false
                }
                state.lookupsLeft -= 1
                return true
            }
        }

        /// What ran out, if anything did.
        var spent: String? { state.withLock { $0.spent } }
    }

    /// The intermediates, found by subject while the budget lasts; once it is spent every look-up finds nothing, so
    /// the verifier's search winds down at once. The search counts as cut short only when a look-up that would have
    /// found an issuer was refused: a chain that failed its policies (an OCSP responder that did not answer in time,
    /// say) and had nowhere else to go is `invalid`, with its failures, whatever the time.
    struct BoundedIntermediates: CustomCertificateStore {
        private var bySubject: [DistinguishedName: [Certificate]] = [:]
        private let budget: Budget

        init(_ certificates: [Certificate], budget: Budget) {
            self.budget = budget
            append(contentsOf: certificates)
        }

        /// A look-up that finds nothing costs nothing (the search ends there); one that finds issuers takes one
        /// from the budget, and finds nothing once it is spent.
        subscript(subject: DistinguishedName) -> [Certificate]? {
            get async {
                guard let issuers = bySubject[subject] else { return nil }
                return budget.take() ? issuers : nil
            }
        }

        func contains(_ certificate: Certificate) async -> Bool {
            bySubject[certificate.subject]?.contains(certificate) ?? false
        }

        mutating func append(contentsOf certificates: some Sequence<Certificate>) {
            for certificate in certificates { bySubject[certificate.subject, default: []].append(certificate) }
        }

        static func == (left: Self, right: Self) -> Bool {
            left.bySubject == right.bySubject && left.budget === right.budget
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(bySubject)
            hasher.combine(ObjectIdentifier(budget))
        }
    }
}
