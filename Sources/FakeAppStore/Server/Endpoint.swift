/// The two verifyReceipt endpoints the fake serves.
enum Endpoint: Sendable {
    case production
    case sandbox

    /// The request path, as Apple's hosts serve it (buy.itunes.apple.com / sandbox.itunes.apple.com).
    init?(path: String) {
        switch path {
        case "/verifyReceipt": self = .production
        case "/sandbox/verifyReceipt": self = .sandbox
        default: return nil
        }
    }

    /// The key in `FakeAppStoreStats`.
    var statsKey: String {
        switch self {
        case .production: "production"
        case .sandbox: "sandbox"
        }
    }

    /// The `environment` of a successful answer.
    var environment: String {
        switch self {
        case .production: "Production"
        case .sandbox: "Sandbox"
        }
    }
}
