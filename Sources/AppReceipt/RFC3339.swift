/// Parses the RFC 3339 timestamps found in app receipts ("2019-07-31T18:22:16Z", with optional fractional seconds
/// and a numeric offset) into milliseconds since 1970. Hand-written: it runs per purchase, and Foundation's date
/// formatters are slow and not Sendable.
enum RFC3339 {
    static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var cursor = 0

        func number(_ width: Int) -> Int64? {
            guard cursor + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[cursor..<cursor + width] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            cursor += width
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard cursor < bytes.count, characters.utf8.contains(bytes[cursor]) else { return false }
            cursor += 1
            return true
        }

        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }

        var millisecond: Int64 = 0
        if expect(".") {
            var digits = 0
            while cursor < bytes.count, bytes[cursor] >= UInt8(ascii: "0"), bytes[cursor] <= UInt8(ascii: "9") {
                if digits < 3 { millisecond = millisecond * 10 + Int64(bytes[cursor] - UInt8(ascii: "0")) }
                digits += 1
                cursor += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millisecond *= 10 }
        }

        var offsetMinutes: Int64 = 0
        if !expect("Zz") {
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "+") || bytes[cursor] == UInt8(ascii: "-")
            else { return nil }
            let sign: Int64 = bytes[cursor] == UInt8(ascii: "-") ? -1 : 1
            cursor += 1
            guard let offsetHours = number(2) else { return nil }
            _ = expect(":")
            guard let offsetRest = number(2) else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetRest)
        }
        guard cursor == bytes.count else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetMinutes * 60
        return seconds * 1_000 + millisecond
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
