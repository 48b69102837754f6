/// The forms of numbers and dates in a Summary Sales Report, checked byte by byte.
enum SalesReportNumbers {
    /// "12", "-3", "+1", or with a zero fraction ("12.00": Apple documents Units as DECIMAL(18,2)); nil for anything
    /// else, a fraction that is not zero, or a value past Int64.
    static func wholeNumber(_ text: Substring) -> Int64? {
        guard isWholeNumberForm(text) else { return nil }
        return Int64(text.firstIndex(of: ".").map { text[..<$0] } ?? text)
    }

    /// The most units a line may carry, sold or refunded: 15 digits, as `receipt_reconcile` accepts (Apple documents
    /// Units as DECIMAL(18,2); no day sells a quadrillion of anything).
    static let maximumUnits: Int64 = 999_999_999_999_999

    /// Whether `text` is a whole number in form (as `wholeNumber` reads it) whatever its size: a number too large for
    /// Int64 is out of range, not of the wrong form.
    static func isWholeNumberForm(_ text: Substring) -> Bool {
        var integer = text
        if let dot = text.firstIndex(of: ".") {
            let fraction = text[text.index(after: dot)...]
            guard !fraction.isEmpty, fraction.allSatisfy({ $0 == "0" }) else { return false }
            integer = text[..<dot]
        }
        let digits = integer.first == "-" || integer.first == "+" ? integer.dropFirst() : integer
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// "0.99", ".99", "-0.99", "1", "1.5"; at most 30 characters.
    static func isDecimal(_ text: Substring) -> Bool {
        guard text.utf8.count <= 30 else { return false }
        let unsigned = text.first == "-" ? text.dropFirst() : text
        let parts = unsigned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        switch parts.count {
        case 1: return !parts[0].isEmpty && isDigits(parts[0])
        case 2: return !parts[1].isEmpty && isDigits(parts[0]) && isDigits(parts[1])
        default: return false
        }
    }

    /// `text` (an `isDecimal`) in the one form `receipt_reconcile` accepts for a price (`^-?[0-9]{1,15}(\.[0-9]{1,6})?$`)
    /// and no other: leading zeros dropped but one ("0.99" for ".99", "-0.5" for "-.5", "12" for "012"), the fraction
    /// kept as written (its scale) but for zeros past the sixth place, no minus sign on a zero ("0.00" for "-0.00").
    /// nil when `text` is not a decimal, or its value needs more than 15 digits before the point or 6 after it.
    static func canonicalDecimal(_ text: Substring) -> String? {
        guard isDecimal(text) else { return nil }
        let negative = text.first == "-"
        let unsigned = negative ? text.dropFirst() : text
        let parts = unsigned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let integer = parts[0].drop { $0 == "0" }
        var fraction = parts.count == 2 ? parts[1] : ""
        while fraction.count > 6, fraction.last == "0" { fraction = fraction.dropLast() }
        guard integer.count <= 15, fraction.count <= 6 else { return nil }
        let isZero = integer.isEmpty && fraction.allSatisfy { $0 == "0" }
        let sign = negative && !isZero ? "-" : ""
        return sign + (integer.isEmpty ? "0" : String(integer)) + (fraction.isEmpty ? "" : "." + fraction)
    }

    /// MM/DD/YYYY with a month 1-12 and a day 1-31.
    static func isDate(_ text: Substring) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 2, parts[1].count == 2, parts[2].count == 4,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let month = Int(parts[0]), let day = Int(parts[1])
        else { return false }
        return (1...12).contains(month) && (1...31).contains(day)
    }
}
