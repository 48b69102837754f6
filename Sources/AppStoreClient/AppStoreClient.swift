import AppStoreModel
import CurlHTTP
import Dispatch
import Foundation
import ReceiptRules

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
        let body: HTTPBody
        do {
            body = HTTPBody(try Self.requestBody(receiptData: receiptData, password: configuration.sharedSecret))
        } catch {
            let failure = AppStoreFailure(
                cause: .configuration, message: "could not encode the request", endpoint: .production
            )
            completion(.configurationError(failure), [])
            return
        }
        call(.production, body: body, calls: [], completion: completion)
    }

    /// Blocking form, for commands and tests.
    public func verify(receiptData: String) -> (AppStoreResult, [AppStoreCall]) {
        let box = ResultBox()
        verify(receiptData: receiptData) { result, calls in box.set((result, calls)) }
        return box.wait()
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

    /// `{"receipt-data": …, "password": …, "exclude-old-transactions": false}`, written directly: this runs for
    /// every call. Whitespace is removed from the receipt (iOS inserts line breaks into base64; Apple wants it
    /// without them).
    static func requestBody(receiptData: String, password: String) throws -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(receiptData.utf8.count + password.utf8.count + 72)
        body.append(contentsOf: #"{"receipt-data":""#.utf8)
        // ASCII (base64 always is): White_Space there is TAB, LF, VT, FF, CR and space.
        let appended: Bool? = receiptData.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return false }
            // Base64 as Apple wants it (no whitespace, nothing to escape) is copied in one go.
            if !bytes.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                body.append(contentsOf: bytes)
                return true
            }
            for byte in bytes where byte != 0x20 && !(0x09...0x0D).contains(byte) {
                appendJSONStringByte(byte, to: &body)
            }
            return true
        }
        if appended != true {
            let scalars = receiptData.unicodeScalars.filter { !$0.properties.isWhitespace }
            for byte in String(String.UnicodeScalarView(scalars)).utf8 { appendJSONStringByte(byte, to: &body) }
        }
        body.append(contentsOf: #"","password":""#.utf8)
        for byte in password.utf8 { appendJSONStringByte(byte, to: &body) }
        body.append(contentsOf: #"","exclude-old-transactions":false}"#.utf8)
        return body
    }

    /// One byte of a JSON string's content: `"` and `\` escaped, control characters as `\u00XX`.
    @inline(__always)
    private static func appendJSONStringByte(_ byte: UInt8, to body: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\\"), UInt8(ascii: "\""):
            body.append(UInt8(ascii: "\\"))
            body.append(byte)
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            body.append(contentsOf: #"\u00"#.utf8)
            body.append(hex[Int(byte >> 4)])
            body.append(hex[Int(byte & 0x0F)])
        default:
            body.append(byte)
        }
    }
}

/// One HTTP call made during an attempt: for logs, metrics and tests ("exactly one sandbox hop").
public struct AppStoreCall: Sendable, Hashable {
    public var endpoint: AppStoreEndpoint
    /// Apple's status ("0", "21007"), "http_503", or the transport failure ("timeout", …).
    public var outcome: String
    public var seconds: Double
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// A one-shot hand-over from a completion handler to a waiting thread.
final class ResultBox: @unchecked Sendable {
    // Safe: `value` is written once under `condition`'s lock and read after the wait under the same lock.
    private let condition = NSCondition()
    private var value: (AppStoreResult, [AppStoreCall])?

    func set(_ newValue: (AppStoreResult, [AppStoreCall])) {
        condition.lock()
        value = newValue
        condition.signal()
        condition.unlock()
    }

    func wait() -> (AppStoreResult, [AppStoreCall]) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value { return value }
            condition.wait()
        }
    }
}
