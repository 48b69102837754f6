/// A model's members, in declaration order, with the lookup table the scanner uses.
///
/// ```swift
/// static let fields: JSONFields<Self> = [
///     .required("status", \.status, as: .native, missing: "no status in the answer"),
///     .value("is_retryable", \.isRetryable, as: .native, alternativeKeys: ["is-retryable"]),
///     .value("receipt", \.receipt),
/// ]
/// ```
public struct JSONFields<Root>: Sendable, ExpressibleByArrayLiteral {
    /// The fields, in the order they are decoded, encoded and written.
    public let all: [JSONField<Root>]
    /// Every name the scanner accepts, keys and alternative keys, each with its field's index in `all`.
    private let names: [(name: StaticString, field: Int)]
    /// The required fields, a bit each (bit n for `all[n]`).
    let requiredMask: UInt64

    /// The fields as declared. A model has at most 64 (`JSONScanner.SeenKeys`) and no name twice: a declaration that
    /// breaks either stops the program the first time the model is used (the unit tests use every model).
    public init(arrayLiteral fields: JSONField<Root>...) {
        precondition(fields.count <= 64, "\(Root.self) declares more than 64 JSON fields")
        all = fields
        names = fields.enumerated().flatMap { index, field in
            ([field.key] + field.alternativeKeys).map { (name: $0, field: index) }
        }
        precondition(
            Set(names.map(\.name.description)).count == names.count, "\(Root.self) declares a JSON key twice"
        )
        requiredMask = fields.enumerated().reduce(0) { mask, entry in
            entry.element.missingMessage == nil ? mask : mask | 1 << UInt64(entry.offset)
        }
    }

    /// The index in `all` of the field named `key`, nil for a member the model does not read.
    func index(of key: JSONScanner.Key) -> Int? {
        for entry in names where entry.name ~= key {
            return entry.field
        }
        return nil
    }
}
