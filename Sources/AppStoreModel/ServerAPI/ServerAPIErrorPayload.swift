/// The body of an App Store Server API error: `{"errorCode": 4040010, "errorMessage": "Transaction id not found."}`.
/// Apple's 401 carries no body at all, and a load balancer's 5xx an HTML page.
public struct ServerAPIErrorPayload: Codable, Sendable, Hashable {
    public var errorCode: Int?
    public var errorMessage: String?

    public init(errorCode: Int?, errorMessage: String?) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}
