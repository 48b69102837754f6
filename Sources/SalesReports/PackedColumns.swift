import AppStoreModel

/// The text of a line's columns in one allocation: for each column of `SalesReportColumn.allCases`, in that order, its
/// length in UTF-8 bytes (LEB128: 7 bits a byte, low bits first) and then its bytes. A report's line costs its text
/// and about one byte a column, not 28 separate strings (16 bytes each, plus an allocation each for those past 15
/// bytes): what keeps the memory a report takes proportional to its text.
struct PackedColumns: Sendable, Equatable {
    private var bytes: [UInt8]

    /// Where each column is in `SalesReportColumn.allCases`.
    private static let positions: [SalesReportColumn: Int] = Dictionary(
        uniqueKeysWithValues: SalesReportColumn.allCases.enumerated().map { ($1, $0) }
    )

    /// Every column empty.
    init() {
        bytes = [UInt8](repeating: 0, count: SalesReportColumn.allCases.count)
    }

    /// Every column's bytes from `value` (UTF-8, already checked).
    init(_ value: (SalesReportColumn) -> ArraySlice<UInt8>) {
        let values = SalesReportColumn.allCases.map(value)
        bytes = []
        bytes.reserveCapacity(values.reduce(0) { $0 + $1.count + Self.lengthBytes($1.count) })
        for text in values {
            Self.appendLength(text.count, to: &bytes)
            bytes += text
        }
    }

    subscript(column: SalesReportColumn) -> String {
        get {
            let (_, text) = ranges(of: column)
            return String(decoding: bytes[text], as: UTF8.self)
        }
        set {
            let (whole, _) = ranges(of: column)
            var replacement: [UInt8] = []
            Self.appendLength(newValue.utf8.count, to: &replacement)
            replacement += newValue.utf8
            bytes.replaceSubrange(whole, with: replacement)
        }
    }

    /// The column's length and bytes, and its bytes alone.
    private func ranges(of column: SalesReportColumn) -> (whole: Range<Int>, text: Range<Int>) {
        var start = 0
        var index = 0
        let target = Self.positions[column] ?? 0
        while true {
            var length = 0
            var shift = 0
            var next = start
            while true {
                let byte = bytes[next]
                length |= Int(byte & 0x7F) << shift
                shift += 7
                next += 1
                if byte & 0x80 == 0 { break }
            }
            if index == target { return (start..<(next + length), next..<(next + length)) }
            start = next + length
            index += 1
        }
    }

    /// How many bytes `appendLength` writes for `length`.
    private static func lengthBytes(_ length: Int) -> Int {
        var count = 1
        var rest = length >> 7
        while rest > 0 {
            count += 1
            rest >>= 7
        }
        return count
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        var rest = length
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: rest))
    }
}
