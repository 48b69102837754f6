/// What `receipt-worker explain` is asked about: one order, one customer, or one transaction's purchase chain.
public enum ExplainSubject: Sendable, Hashable {
    /// A customer's order id, in every app or in `bundleId`'s.
    case order(String, bundleId: String?)
    /// A customer (`user_id`): all of their orders and credits, the newest `ExplainReader.rowLimit` of each.
    case user(String)
    /// Any transaction id of a purchase chain (the original or a renewal's): everything on the chain.
    case transaction(String)

    /// The subject as one phrase, e.g. `order o-1 (every app)`.
    public var description: String {
        switch self {
        case .order(let id, let bundleId): "order \(id) (\(bundleId.map { "app \($0)" } ?? "every app"))"
        case .user(let id): "user \(id)"
        case .transaction(let id): "transaction \(id)"
        }
    }
}
