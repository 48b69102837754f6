/// The answer of a readiness check: ready, or not with a one-line reason (the body of a 503 from /readyz).
public struct Readiness: Sendable, Hashable, CustomStringConvertible {
    public var isReady: Bool
    public var reason: String

    public static let ready = Readiness(isReady: true, reason: "ready")

    public static func notReady(_ reason: String) -> Readiness {
        Readiness(isReady: false, reason: reason)
    }

    public init(isReady: Bool, reason: String) {
        self.isReady = isReady
        // One line: libpq's multi-line, tab-indented messages would break the probe output operators read.
        self.reason = reason.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    public var description: String { isReady ? "ready" : "not ready: \(reason)" }
}
