extension Purchase {
    /// The order of `VerdictRules.merge` and of credit candidates, newest first: purchase date descending (a purchase
    /// without a date sorts last), ties by transaction id descending. A strict total order over transaction ids, so
    /// sorting never depends on the input order.
    static func isNewer(_ a: Purchase, than b: Purchase) -> Bool {
        switch (a.purchaseDateMs, b.purchaseDateMs) {
        case (.some(let x), .some(let y)) where x != y: return x > y
        case (.some, nil): return true
        case (nil, .some): return false
        default: return transactionIdPrecedes(b.transactionId, a.transactionId)
        }
    }

    /// Ascending order of transaction ids: numeric for all-digit ids (Apple's grow over time, and "999" must come
    /// before "1000"), otherwise by their characters.
    static func transactionIdPrecedes(_ a: String, _ b: String) -> Bool {
        let aDigits = a.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        let bDigits = b.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        switch (aDigits, bDigits) {
        case (true, true):
            let aValue = a.drop { $0 == "0" }, bValue = b.drop { $0 == "0" }
            if aValue.count != bValue.count { return aValue.count < bValue.count }
            // Same number of significant digits: the digits order them; leading zeros break the remaining ties.
            return aValue != bValue ? aValue < bValue : a.count < b.count
        case (true, false): return true
        case (false, true): return false
        case (false, false): return a < b
        }
    }
}
