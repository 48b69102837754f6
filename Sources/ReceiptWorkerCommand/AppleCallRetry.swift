import AppStoreClient
import Foundation

/// The operator commands' calls to Apple (set-account-token, extend-renewal, notifications test): `call` again while
/// Apple answers "try again" (429, 5xx, no connection), `attempts` in all, waiting Apple's Retry-After or 1, 2, … s
/// (at most 10 s) between them. Returns the last answer: a `.retryable` one only when every attempt was.
enum AppleCallRetry {
    static func retrying<Value>(attempts: Int, _ call: () -> ServerAPIResult<Value>) -> ServerAPIResult<Value> {
        var attempt = 1
        while true {
            let result = call()
            guard case .retryable(let failure) = result, attempt < attempts else { return result }
            Thread.sleep(forTimeInterval: min(10, failure.retryAfterSeconds ?? Double(attempt)))
            attempt += 1
        }
    }
}
