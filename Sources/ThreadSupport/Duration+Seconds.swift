extension Duration {
    /// This duration in seconds, as a `Double` (for logs, metrics, and settings given in seconds).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
