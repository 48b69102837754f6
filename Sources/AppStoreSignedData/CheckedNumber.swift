/// Numbers from a payload, converted without a trap: a JSON number Foundation decoded as a Double may be anything
/// (1e300, -1e300, 1.5); what does not fit is `malformed`.
enum CheckedNumber {
    /// Milliseconds since 1970, the fraction Xcode writes dropped.
    static func milliseconds(_ number: Double, _ field: String) throws(SignedDataError) -> Int64 {
        guard number.isFinite, let whole = Int64(exactly: number.rounded(.down)) else {
            throw SignedDataError(.malformed, "\(field) is \(number), not a time in milliseconds")
        }
        return whole
    }

    /// A whole number (an id).
    static func integer(_ number: Double, _ field: String) throws(SignedDataError) -> Int64 {
        guard let whole = Int64(exactly: number) else {
            throw SignedDataError(.malformed, "\(field) is \(number), not a whole number in range")
        }
        return whole
    }
}
