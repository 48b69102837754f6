import AppStoreModel
import CurlHTTP
import Dispatch
import ReceiptRules
import ThreadSupport

/// Asks Apple's verifyReceipt about a receipt: production first; on 21007 the sandbox once, on 21008 production
/// once; at most two calls per attempt. The environment travels with each request, never in shared state.
/// Knows nothing of jobs or the database.
public final class AppStoreClient: Sendable {
    public let configuration: AppStoreConfiguration
    private let transport: CurlMultiTransport
    /// Where answers are read and completions run: off the transport's thread, which then only moves bytes. When
    /// thousands of answers arrive together, reading them would otherwise hold back the sockets of the rest.
    private let answers = DispatchQueue(label: "receipt-worker.app-store-answers")

    public init(configuration: AppStoreConfiguration, transport: CurlMultiTransport) throws(AppStoreConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        self.transport = transport
    }

    /// Verifies one receipt. `completion` runs on the client's answer queue (one at a time) and must be quick.
    public func verify(
        receiptData: String,
        completion: @escaping @Sendable (AppStoreResult, [AppStoreCall]) -> Void
    ) {
        let body = HTTPBody(Self.requestBody(receiptData: receiptData, password: configuration.sharedSecret))
        call(.production, body: body, calls: [], completion: completion)
    }

    private func call(
        _ endpoint: AppStoreEndpoint,
        body: HTTPBody,
        calls: [AppStoreCall],
        completion: @escaping @Sendable (AppStoreResult, [AppStoreCall]) -> Void
    ) {
        let request = HTTPRequest(
            url: configuration.url(for: endpoint),
            body: body,
            headers: ["Content-Type: application/json", "Accept: application/json"],
            connectTimeoutMilliseconds: Int(configuration.connectTimeoutSeconds * 1000),
            totalTimeoutMilliseconds: Int(configuration.timeoutSeconds * 1000),
            maxResponseBytes: configuration.maxResponseBytes
        )
        let started = ContinuousClock.now
        transport.send(request) { [self] transfer in
            answers.async { [self] in
                answered(
                    transfer, endpoint: endpoint, started: started, body: body, calls: calls, completion: completion
                )
            }
        }
    }

    /// Reads one answer: done, or the one allowed redirect.
    private func answered(
        _ transfer: Result<HTTPResponse, HTTPError>,
        endpoint: AppStoreEndpoint,
        started: ContinuousClock.Instant,
        body: HTTPBody,
        calls: [AppStoreCall],
        completion: @escaping @Sendable (AppStoreResult, [AppStoreCall]) -> Void
    ) {
        let step = Self.interpret(transfer, endpoint: endpoint)
        let seconds = (ContinuousClock.now - started).seconds
        let calls = calls + [AppStoreCall(endpoint: endpoint, outcome: step.label, seconds: seconds)]
        switch step {
        case .done(let result):
            completion(result, calls)
        case .redirect(let next, let status) where calls.count < 2:
            _ = status
            call(next, body: body, calls: calls, completion: completion)
        case .redirect(let next, let status):
            let failure = AppStoreFailure(
                cause: .redirectLoop,
                message: "a second redirect (\(AppleStatus.describe(status)), to \(next.rawValue)) in one attempt",
                endpoint: endpoint,
                appleStatus: status
            )
            completion(.retryable(failure), calls)
        }
    }

    /// `{"receipt-data": …, "password": …, "exclude-old-transactions": false}`. Whitespace is removed from the
    /// receipt (iOS inserts line breaks into base64; Apple wants it without them).
    static func requestBody(receiptData: String, password: String) -> [UInt8] {
        VerifyReceiptRequest(receiptData: withoutWhitespace(receiptData), password: password).jsonBytes()
    }

    /// `receipt` without White_Space characters; as it is (no copy) when it has none, as base64 normally has not.
    private static func withoutWhitespace(_ receipt: String) -> String {
        // Every White_Space character is a byte at or below 0x20 (ASCII), or starts at or above 0x80.
        guard receipt.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x80 }) else { return receipt }
        return String(String.UnicodeScalarView(receipt.unicodeScalars.filter { !$0.properties.isWhitespace }))
    }
}

/// One HTTP call made during an attempt: for logs, metrics and tests ("exactly one sandbox hop").
public struct AppStoreCall: Sendable, Hashable {
    public var endpoint: AppStoreEndpoint
    /// Apple's status ("0", "21007"), "http_503", or the transport failure ("timeout", …). For the App Store Server
    /// API: "http_200", Apple's error code ("4040010"), "http_401", the transport failure, or "paced" for a request
    /// pacing would have held too long (never sent).
    public var outcome: String
    /// From sending to the answer.
    public var seconds: Double
    /// How long pacing held the request before it was sent (App Store Server API).
    public var waitedSeconds: Double = 0
}
