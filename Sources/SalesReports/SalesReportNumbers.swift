/// The forms of numbers and dates in a Summary Sales Report, checked byte by byte.
enum SalesReportNumbers {
    /// "12", "-3", "+1", or with a zero fraction ("12.00": Apple documents Units as DECIMAL(18,2)); nil for anything
    /// else, a fraction that is not zero, or a value past Int64.
    static func wholeNumber(_ text: Substring) -> Int64? {
        var integer = text
        if let dot = text.firstIndex(of: ".") {
            let fraction = text[text.index(after: dot)...]
            guard !fraction.isEmpty, fraction.allSatisfy({ $0 == "0" }) else { return nil }
            integer = text[..<dot]
        }
        let digits = integer.first == "-" || integer.first == "+" ? integer.dropFirst() : integer
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(integer)
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
