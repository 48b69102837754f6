import Foundation

/// Apple's request body, `{"signedPayload": "…"}`, taken apart without trusting it: the payload's shape is
/// `receive_notification()`'s to judge, its signature the workers'.
public enum NotificationBody {
    /// The value of `signedPayload`, or a one-line reason for a 400 (never quoting the body).
    public static func signedPayload(_ body: [UInt8]) -> Result<String, Refusal> {
        guard !body.isEmpty else { return .failure(Refusal("empty body: expected {\"signedPayload\": \"…\"}")) }
        guard let json = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) else {
            return .failure(Refusal("the body is not JSON: expected {\"signedPayload\": \"…\"}"))
        }
        guard let object = json as? [String: Any] else {
            return .failure(Refusal("the body is not a JSON object: expected {\"signedPayload\": \"…\"}"))
        }
        guard let value = object["signedPayload"] else {
            return .failure(Refusal("the body has no signedPayload"))
        }
        guard let payload = value as? String else {
            return .failure(Refusal("signedPayload is not a string"))
        }
        return .success(payload)
    }

    /// Why a body was refused: one line of plain text.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String

        public init(_ reason: String) {
            self.reason = reason
        }

        public var description: String { reason }
    }
}
