import Crypto
import Foundation
import Synchronization
import ThreadSupport

/// The certificate chains the verifier validated, keyed by the bytes of their leaf and intermediate (never by the
/// header's text, which an extra member changes), the least recently used evicted first; and the validations under
/// way, one per chain: callers that miss the cache for the same chain wait for the first one's answer, while
/// different chains are validated side by side (an OCSP responder slow for one holds up no other).
final class ChainCache: Sendable {
    /// SHA-256 over the leaf's DER (its length first) and the intermediate's.
    struct Key: Hashable, Sendable {
        let digest: SHA256Digest

        init(leaf: [UInt8], intermediate: [UInt8]) {
            var hash = SHA256()
            withUnsafeBytes(of: UInt64(leaf.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: leaf)
            hash.update(data: intermediate)
            digest = hash.finalize()
        }
    }

    /// A validation under way; `result` is set once, when it ends.
    final class Validation: Sendable {
        let result = ConditionLock<Result<VerifiedChain, SignedDataError>?>(nil)

        func wait() -> Result<VerifiedChain, SignedDataError> { result.wait { $0 } }
    }

    /// What a caller that needs a chain is to do.
    enum Claim {
        /// Use this entry.
        case cached(VerifiedChain)
        /// Another caller is validating the chain: wait for its answer.
        case wait(Validation)
        /// Validate the chain, then `finish` the validation.
        case validate(Validation)
    }

    private struct State {
        var entries: [Key: (chain: VerifiedChain, lastUsed: UInt64)] = [:]
        var validating: [Key: Validation] = [:]
        var clock: UInt64 = 0
        var validations = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    /// The entry for `key` that `usable` accepts (marked used), else the validation under way for it, else a new
    /// validation that the caller must make and `finish`.
    func claim(_ key: Key, usable: (VerifiedChain) -> Bool) -> Claim {
        state.withLock { state in
            if let entry = state.entries[key], usable(entry.chain) {
                state.clock += 1
                state.entries[key]?.lastUsed = state.clock
                return .cached(entry.chain)
            }
            if let validation = state.validating[key] { return .wait(validation) }
            let validation = Validation()
            state.validating[key] = validation
            state.validations += 1
            return .validate(validation)
        }
    }

    /// The entry for `key`, if `usable` accepts it (marked used): the hot path, which creates nothing.
    func cached(_ key: Key, usable: (VerifiedChain) -> Bool) -> VerifiedChain? {
        state.withLock { state in
            guard let entry = state.entries[key], usable(entry.chain) else { return nil }
            state.clock += 1
            state.entries[key]?.lastUsed = state.clock
            return entry.chain
        }
    }

    /// Ends `validation`: a chain that passed is cached (the least recently used entry making room), and whoever
    /// waits for it is woken.
    func finish(_ key: Key, _ validation: Validation, _ result: Result<VerifiedChain, SignedDataError>) {
        state.withLock { state in
            if case .success(let chain) = result {
                if state.entries[key] == nil, state.entries.count >= capacity,
                    let oldest = state.entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
                {
                    state.entries[oldest] = nil
                }
                state.clock += 1
                state.entries[key] = (chain, state.clock)
            }
            if state.validating[key] === validation { state.validating[key] = nil }
        }
        validation.result.withLock { $0 = result }
    }

    /// How many validations were started.
    var validations: Int { state.withLock { $0.validations } }

    /// How many chains are cached.
    var count: Int { state.withLock { $0.entries.count } }

    /// True when the chain with `key` is cached (whatever its age).
    func contains(_ key: Key) -> Bool { state.withLock { $0.entries[key] != nil } }
}
