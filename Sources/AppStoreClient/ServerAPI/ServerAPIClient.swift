import AppStoreModel
import CurlHTTP
import Dispatch
import Foundation
import ThreadSupport

/// Asks Apple's App Store Server API about transactions, orders and notifications, over `CurlMultiTransport`.
///
/// Every request carries a token signed with the In-App Purchase key (reused while it is fresh), is paced per
/// (bundle id, operation, environment) under Apple's rate limits, the sandbox's a tenth of production's (a burst
/// waits here, on a Dispatch timer, instead of meeting 429s), and its answer is classified into a
/// `ServerAPIResult`. Lookups go to production first and, when production does not know the id, once to the sandbox,
/// as verifyReceipt's 21007 does; the result names the environment that answered. Signed data comes back as it came
/// (JWS strings): verify it with `SignedDataVerifier` before trusting it.
/// Knows nothing of jobs or the database.
///
/// Completions run on the client's answer queue, one at a time, and must be quick. The blocking forms are for
/// commands and tests: never call them from a completion.
public final class ServerAPIClient: Sendable {
    public let configuration: ServerAPIConfiguration
    /// Holds requests to Apple's rates; shared by every caller of this client.
    public let pacer: RequestPacer
    private let transport: CurlMultiTransport
    private let signer: ServerAPITokenSigner
    /// The wall clock, for tokens and Retry-After dates.
    private let now: @Sendable () -> Date
    /// Where answers are read, paced requests wait, and completions run: off the transport's thread.
    let answers = DispatchQueue(label: "receipt-worker.server-api-answers")

    /// - Parameter now: the wall clock (tokens' `iat`/`exp`, Retry-After); pacing uses `pacingClock`, monotonic.
    public init(
        configuration: ServerAPIConfiguration,
        transport: CurlMultiTransport,
        now: @escaping @Sendable () -> Date = { Date() },
        pacingClock: @escaping @Sendable () -> Double = RequestPacer.monotonicSeconds
    ) throws(AppStoreConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        self.transport = transport
        self.now = now
        signer = ServerAPITokenSigner(
            keyID: configuration.keyID, issuerID: configuration.issuerID, privateKey: configuration.privateKey,
            lifetimeSeconds: configuration.tokenLifetimeSeconds
        )
        pacer = RequestPacer(
            rate: { [configuration] in configuration.requestsPerSecond(for: $0, in: $1) },
            burst: configuration.burst, maxDelaySeconds: configuration.maxPacingDelaySeconds, now: pacingClock
        )
    }

    /// Runs `attempt` in `pinned`, or in production and then, when production does not know the id, once in the
    /// sandbox; puts the answers together into the result.
    func acrossEnvironments<Value: Sendable>(
        _ pinned: AppStoreEndpoint?,
        completion: @escaping @Sendable (ServerAPIResult<Value>, [AppStoreCall]) -> Void,
        attempt: @escaping @Sendable (
            AppStoreEndpoint, @escaping @Sendable (Attempt<Value>, [AppStoreCall]) -> Void
        ) -> Void
    ) {
        let first = pinned ?? .production
        attempt(first) { answer, calls in
            guard pinned == nil, case .failed(let errorClass, let failure) = answer, errorClass.isNotFound else {
                completion(Self.result(answer, from: first), calls)
                return
            }
            attempt(.sandbox) { sandboxAnswer, sandboxCalls in
                let result = Self.result(sandboxAnswer, from: .sandbox, after: (errorClass, failure))
                completion(result, calls + sandboxCalls)
            }
        }
    }

    /// Sends `request` for `bundleId` to `environment` once pacing lets it go, and has `read` take a successful body
    /// apart; `completion` gets the outcome and the call's record (whose outcome is what `read` made of the answer),
    /// on the answer queue.
    func exchange<Value: Sendable>(
        _ request: ServerAPIRequest,
        bundleId: String,
        environment: AppStoreEndpoint,
        read: @escaping @Sendable ([UInt8]) -> Attempt<Value>,
        completion: @escaping @Sendable (Attempt<Value>, AppStoreCall) -> Void
    ) {
        let key = RequestPacer.Key(bundleId: bundleId, operation: request.operation, environment: environment)
        switch pacer.reserve(key) {
        case .tooLong(let seconds):
            let failure = AppStoreFailure(
                cause: .rateLimited,
                message: "\(request.operation.rawValue) for \(bundleId) not sent: pacing would hold it "
                    + "\(String(format: "%.1f", seconds)) s, over \(configuration.maxPacingDelaySeconds) s",
                endpoint: environment,
                retryAfterSeconds: seconds
            )
            answers.async {
                let call = AppStoreCall(endpoint: environment, outcome: "paced", seconds: 0)
                completion(.failed(.retryable, failure), call)
            }
        case .send(let delay):
            let queued = ContinuousClock.now
            after(delay) { [self] in
                send(request, key: key, environment: environment, queued: queued, read: read, completion: completion)
            }
        }
    }

    private func after(_ seconds: Double, _ work: @escaping @Sendable () -> Void) {
        if seconds > 0 {
            answers.asyncAfter(deadline: .now() + seconds, execute: work)
        } else {
            work()
        }
    }

    private func send<Value: Sendable>(
        _ request: ServerAPIRequest,
        key: RequestPacer.Key,
        environment: AppStoreEndpoint,
        queued: ContinuousClock.Instant,
        read: @escaping @Sendable ([UInt8]) -> Attempt<Value>,
        completion: @escaping @Sendable (Attempt<Value>, AppStoreCall) -> Void
    ) {
        // A 429 that arrived while this request waited for its slot holds it further, and so do requests released
        // just before it when its timer fired late.
        let held = pacer.release(key)
        if held > 0 {
            after(held) { [self] in
                send(request, key: key, environment: environment, queued: queued, read: read, completion: completion)
            }
            return
        }
        let waited = (ContinuousClock.now - queued).seconds
        let token: String
        do {
            token = try signer.token(bundleId: key.bundleId, now: now())
        } catch {
            let failure = AppStoreFailure(
                cause: .configuration, message: "the App Store Server API token cannot be signed: \(error)",
                endpoint: environment
            )
            answers.async {
                completion(
                    .failed(.configuration, failure),
                    AppStoreCall(endpoint: environment, outcome: "configuration", seconds: 0, waitedSeconds: waited)
                )
            }
            return
        }
        var headers = ["Authorization: Bearer \(token)", "Accept: application/json"]
        if request.method != .get { headers.append("Content-Type: application/json") }
        let http = HTTPRequest(
            url: request.url(base: configuration.url(for: environment)),
            method: request.method,
            body: request.body,
            headers: headers,
            connectTimeoutMilliseconds: Int(configuration.connectTimeoutSeconds * 1000),
            totalTimeoutMilliseconds: Int(configuration.timeoutSeconds * 1000),
            maxResponseBytes: configuration.maxResponseBytes
        )
        let started = ContinuousClock.now
        transport.send(http) { [self] transfer in
            answers.async { [self] in
                let attempt = Self.interpret(transfer, environment: environment, now: now()).flatMap(read)
                if case .failed(_, let failure) = attempt,
                    failure.cause == .rateLimited || failure.retryAfterSeconds != nil
                {
                    // Apple asked for quiet (429, or a Retry-After): hold this bundle id and operation until then, for
                    // 1 s after a 429 that did not say.
                    pacer.pause(key, seconds: failure.retryAfterSeconds ?? 1)
                }
                let call = AppStoreCall(
                    endpoint: environment, outcome: Self.label(attempt),
                    seconds: (ContinuousClock.now - started).seconds, waitedSeconds: waited
                )
                completion(attempt, call)
            }
        }
    }

    /// Completes with `failure` as a rejection, on the answer queue, without a call.
    func refuse<Value: Sendable>(
        _ failure: AppStoreFailure, _ completion: @escaping @Sendable (ServerAPIResult<Value>, [AppStoreCall]) -> Void
    ) {
        answers.async { completion(.rejected(failure), []) }
    }

    /// Waits for a callback-style call's completion.
    func blocking<Value: Sendable>(
        _ start: (@escaping @Sendable (ServerAPIResult<Value>, [AppStoreCall]) -> Void) -> Void
    ) -> (ServerAPIResult<Value>, [AppStoreCall]) {
        let answer = ConditionLock<(ServerAPIResult<Value>, [AppStoreCall])?>(nil)
        start { result, calls in answer.withLock { $0 = (result, calls) } }
        return answer.wait { $0 }
    }
}

extension ServerAPIClient.Attempt {
    /// Reads a value out of this one, keeping a failure as it is.
    func flatMap<Other: Sendable>(
        _ transform: (Value) -> ServerAPIClient.Attempt<Other>
    ) -> ServerAPIClient.Attempt<Other> {
        switch self {
        case .value(let value): transform(value)
        case .failed(let errorClass, let failure): .failed(errorClass, failure)
        }
    }
}
