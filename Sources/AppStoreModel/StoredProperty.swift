/// One property of a model, as a field reads and writes it. A stored property is reached at its offset in the struct
/// (`MemoryLayout.offset(of:)`, used as its documentation shows): a plain load or store, where applying the key path
/// goes through the runtime, some hundreds of instructions, on every member the scanner and the writer handle.
/// A property without an offset (a computed one) goes through the key path.
struct StoredProperty<Root, Value>: Sendable {
    let path: WritableKeyPath<Root, Value> & Sendable
    /// Where the property lies in `Root`; nil when it is not stored there.
    private let offset: Int?

    init(_ path: WritableKeyPath<Root, Value> & Sendable) {
        self.path = path
        offset = MemoryLayout<Root>.offset(of: path)
    }

    /// Calls `body` with the property of the model at `root`, borrowed where it lies. A pointer rather than the
    /// model, and a borrow rather than a return, because copies (every member retained) would cost more than the
    /// writing they serve.
    func with<Result>(_ root: UnsafePointer<Root>, _ body: (borrowing Value) throws -> Result) rethrows -> Result {
        guard let offset else { return try body(root.pointee[keyPath: path]) }
        return try body((UnsafeRawPointer(root) + offset).assumingMemoryBound(to: Value.self).pointee)
    }

    func set(_ value: Value, in root: inout Root) {
        guard let offset else {
            root[keyPath: path] = value
            return
        }
        withUnsafeMutablePointer(to: &root) { pointer in
            (UnsafeMutableRawPointer(pointer) + offset).assumingMemoryBound(to: Value.self).pointee = value
        }
    }
}
