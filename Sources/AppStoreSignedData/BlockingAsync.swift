import ThreadSupport

/// Runs async work to completion for a synchronous caller (a worker's thread, a command), on a thread of its own
/// for each call: neither the cooperative pool (a caller that is itself on that small pool, a test say, would block
/// the very threads the work needs) nor Dispatch's (whose threads may all be blocked callers), nor a thread shared
/// with other calls, so that one slow validation (an OCSP responder that takes its time, a costly chain) holds up no
/// other: a receipt's, a StoreKit 2 transaction's and a notification's are validated side by side. The work it runs
/// is rare (a certificate chain validated, every 15 minutes at most per chain), bounded (`ChainSearch`), and what it
/// awaits (an OCSP answer) resumes on the same thread.
enum BlockingAsync {
    /// Runs `work` and waits for its result.
    static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = ConditionLock<T?>(nil)
        let executor = ThreadExecutor(name: "signed-data")
        Task(executorPreference: executor) {
            let value = await work()
            result.withLock { $0 = value }
        }
        let value = result.wait { $0 }
        executor.finish()
        return value
    }
}
