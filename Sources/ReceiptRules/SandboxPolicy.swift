/// What to do with purchases Apple verified in the sandbox (App Review, TestFlight, developers).
public enum SandboxPolicy: Sendable, Hashable {
    /// Credit them, with environment = Sandbox (finance excludes them). App Review needs this.
    case accept
    /// Never credit them.
    case reject
    /// Credit them only for these user ids (App Review's accounts).
    case allowlist(Set<String>)

    /// Whether a sandbox purchase may be credited to this user.
    public func allows(userId: String) -> Bool {
        switch self {
        case .accept: true
        case .reject: false
        case .allowlist(let users): users.contains(userId)
        }
    }
}
