/// An error of the queue layer that is not a plain database error: a missing or changed migration, a row that
/// does not decode. Database errors pass through as `PostgresError`.
public struct QueueError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
