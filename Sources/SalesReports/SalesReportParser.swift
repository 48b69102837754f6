import Foundation
import AppStoreModel

/// Reads the bytes of a Summary Sales Report (see `SalesReport.parse`). Works on bytes, a line at a time as the text
/// is decompressed: a line is what lies between two LF bytes (a CR before the LF dropped), a field what lies between
/// two TABs. Only the current line (at most `maximumLineBytes`) and the lines read so far (`PackedColumns`) are kept:
/// never the whole text, decompressed or as a `String`.
struct SalesReportParser {
    let maximumBytes: Int
    let maximumLines: Int

    /// A line longer than this (without its line end) is refused. Apple's lines are a few hundred bytes.
    static let maximumLineBytes = 64 << 10
    /// A header with more columns than this is refused. Apple's have 28.
    static let maximumColumns = 64
    /// How much of the start of the text `recognize` looks at.
    static let recognizedBytes = 2048

    func parse(_ input: [UInt8]) throws(SalesReportError) -> SalesReport {
        guard !input.isEmpty else { throw SalesReportError.notAReport(.empty, "the file is empty") }
        var reader = LineReader(maximumLines: maximumLines)
        if Gunzip.isGzip(input) {
            let count = try Gunzip.decompress(input, limit: maximumBytes) { (chunk) throws(SalesReportError) in
                try reader.feed(chunk)
            }
            guard count > 0 else { throw SalesReportError.notAReport(.empty, "the gzip file holds nothing") }
        } else {
            guard input.count <= maximumBytes else {
                throw SalesReportError.notAReport(.tooLarge, "it is larger than \(maximumBytes >> 20) MiB")
            }
            try reader.feed(input[...])
        }
        return try reader.finish()
    }

    /// Refuses what is plainly something else, by its first bytes (`start`, the first `recognizedBytes` or all of the
    /// text when `isAll`): HTML, XML, JSON, ZIP, UTF-16, binary, not UTF-8. Each line is checked for NUL bytes and
    /// UTF-8 again as it is read.
    static func recognize(_ start: [UInt8], isAll: Bool) throws(SalesReportError) {
        let first = start.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        let lowered = String(decoding: start, as: UTF8.self).lowercased()
        if first == UInt8(ascii: "<") {
            if lowered.contains("<html") || lowered.contains("<!doctype html") {
                throw SalesReportError.notAReport(
                    .notAReport, "it is HTML (a web page, perhaps an error or sign-in page)"
                )
            }
            throw SalesReportError.notAReport(.notAReport, "it is XML or HTML (it starts with '<')")
        }
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            let hint = lowered.contains("\"errors\"") ? " (an App Store Connect API error answer)" : ""
            throw SalesReportError.notAReport(.notAReport, "it is JSON\(hint)")
        }
        if start.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            throw SalesReportError.notAReport(
                .notAReport,
                "it is a ZIP archive; Apple serves the report gzip-compressed: give the .gz file or the text"
            )
        }
        if start.starts(with: [0xFF, 0xFE]) || start.starts(with: [0xFE, 0xFF]) {
            throw SalesReportError.notAReport(.notAReport, "it is UTF-16 text; Apple's reports are UTF-8")
        }
        if let nul = start.firstIndex(of: 0) {
            throw SalesReportError.notAReport(.notAReport, "it is binary data (a NUL byte at offset \(nul))")
        }
        // A character cut at the end of `start` is checked with its line.
        let whole = isAll ? start[...] : start[..<(start.lastIndex(of: 0x0A) ?? 0)]
        if String(validating: whole, as: UTF8.self) == nil {
            throw SalesReportError.notAReport(.notAReport, "it is not UTF-8 text")
        }
    }

    /// A line's fields, at most `limit` (the last holding the rest of the line, tabs and all).
    static func fields(_ line: ArraySlice<UInt8>, limit: Int) -> [ArraySlice<UInt8>] {
        line.split(separator: 0x09, maxSplits: limit - 1, omittingEmptySubsequences: false)
    }
}

/// The text as it comes, cut into lines, each read as soon as it is whole.
private struct LineReader {
    let maximumLines: Int
    /// The first bytes of the text, until there are enough to `recognize`.
    private var start: [UInt8] = []
    private var recognized = false
    /// The line being read, until its LF comes.
    private var pending: [UInt8] = []
    /// The number of the line being read (1-based) and the offset of its first byte in the text.
    private var number = 1
    private var offset = 0
    private var header: Header?
    private var lines: [SalesReportLine] = []

    init(maximumLines: Int) {
        self.maximumLines = maximumLines
    }

    mutating func feed(_ chunk: ArraySlice<UInt8>) throws(SalesReportError) {
        var rest = chunk
        if !recognized {
            let take = min(SalesReportParser.recognizedBytes + 3 - start.count, rest.count)
            start += rest.prefix(take)
            rest = rest.dropFirst(take)
            guard start.count == SalesReportParser.recognizedBytes + 3 else { return }
            try begin(isAll: false)
        }
        try split(rest)
    }

    mutating func finish() throws(SalesReportError) -> SalesReport {
        if !recognized { try begin(isAll: true) }
        if !pending.isEmpty {
            let line = pending
            pending = []
            try read(line[...])
        }
        guard header != nil else {
            throw SalesReportError.notAReport(.missingColumns, "its first line is empty; it should be the header")
        }
        return SalesReport(lines: lines)
    }

    /// Recognizes the start of the text (a byte-order mark dropped), then reads its lines.
    private mutating func begin(isAll: Bool) throws(SalesReportError) {
        recognized = true
        var text = start
        start = []
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }
        try SalesReportParser.recognize(Array(text.prefix(SalesReportParser.recognizedBytes)), isAll: isAll)
        try split(text[...])
    }

    private mutating func split(_ chunk: ArraySlice<UInt8>) throws(SalesReportError) {
        var rest = chunk
        while let end = rest.firstIndex(of: 0x0A) {
            if pending.isEmpty {
                try read(rest[..<end])
            } else {
                try append(rest[..<end])
                let line = pending
                pending.removeAll(keepingCapacity: true)
                try read(line[...])
            }
            offset += 1
            rest = rest[(end + 1)...]
        }
        try append(rest)
    }

    /// Keeps the start of a line whose end has not come yet; refuses it once it is too long.
    private mutating func append(_ part: ArraySlice<UInt8>) throws(SalesReportError) {
        // One byte more for a CR before the LF.
        guard pending.count + part.count <= SalesReportParser.maximumLineBytes + 1 else { throw tooLong() }
        pending += part
    }

    private func tooLong() -> SalesReportError {
        var error = SalesReportError.notAReport(
            .tooLarge, "line \(number) is longer than \(SalesReportParser.maximumLineBytes >> 10) KiB"
        )
        error.line = number
        return error
    }

    /// One whole line, its LF gone.
    private mutating func read(_ bytes: ArraySlice<UInt8>) throws(SalesReportError) {
        guard number <= maximumLines else {
            throw SalesReportError.notAReport(.tooLarge, "it has more than \(maximumLines) lines")
        }
        let line = bytes.last == 0x0D ? bytes.dropLast() : bytes
        guard line.count <= SalesReportParser.maximumLineBytes else { throw tooLong() }
        if let nul = line.firstIndex(of: 0) {
            let at = offset + (nul - line.startIndex)
            throw SalesReportError.notAReport(.notAReport, "it is binary data (a NUL byte at offset \(at))")
        }
        guard String(validating: line, as: UTF8.self) != nil else {
            throw SalesReportError.notAReport(.notAReport, "it is not UTF-8 text (line \(number))")
        }
        if let header {
            if !line.isEmpty { lines.append(try header.line(line, number: number)) }
        } else {
            guard !line.isEmpty else {
                throw SalesReportError.notAReport(.missingColumns, "its first line is empty; it should be the header")
            }
            header = try Header(line)
        }
        offset += bytes.count
        number += 1
    }
}

/// The header line: where each known column is.
private struct Header {
    let count: Int
    let index: [SalesReportColumn: Int]

    init(_ line: ArraySlice<UInt8>) throws(SalesReportError) {
        let fields = SalesReportParser.fields(line, limit: SalesReportParser.maximumColumns + 1)
        guard fields.count <= SalesReportParser.maximumColumns else {
            throw SalesReportError.notAReport(
                .missingColumns,
                "its first line has more than \(SalesReportParser.maximumColumns) columns (Apple's reports have "
                    + "\(SalesReportColumn.allCases.count))"
            )
        }
        let names = fields.map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
        guard names.count > 1 else {
            let looksCSV = names.first?.contains(",") == true
            let comma = looksCSV ? " (it looks comma-separated; Apple's are tab-separated)" : ""
            throw SalesReportError.notAReport(
                .missingColumns, "its first line has no tab-separated column names\(comma)"
            )
        }
        var index: [SalesReportColumn: Int] = [:]
        for (position, name) in names.enumerated() {
            guard let column = SalesReportColumn(rawValue: name) else { continue }
            guard index[column] == nil else {
                throw SalesReportError.notAReport(.missingColumns, "its header names the column \(name) twice")
            }
            index[column] = position
        }
        let missing = SalesReportColumn.required.filter { index[$0] == nil }
        guard missing.isEmpty else {
            let names = missing.map(\.rawValue).joined(separator: ", ")
            throw SalesReportError.notAReport(.missingColumns, "missing columns \(names)")
        }
        count = names.count
        self.index = index
    }

    func line(_ bytes: ArraySlice<UInt8>, number: Int) throws(SalesReportError) -> SalesReportLine {
        // One field more than the header has, to tell a line with too many.
        let fields = SalesReportParser.fields(bytes, limit: count + 1)
        guard fields.count == count else {
            let found = fields.count > count ? "more than \(count)" : "\(fields.count)"
            throw SalesReportError.badLine(number, "\(found) fields where the header has \(count)")
        }
        let bytes = { (column: SalesReportColumn) -> ArraySlice<UInt8> in index[column].map { fields[$0] } ?? [] }
        let value = { (column: SalesReportColumn) -> Substring in Substring(String(decoding: bytes(column), as: UTF8.self)) }
        let unitsText = value(.units)
        guard SalesReportNumbers.isWholeNumberForm(unitsText) else {
            throw SalesReportError.badLine(number, "Units \(SalesReportError.quoted(unitsText)) is not a whole number")
        }
        guard let units = SalesReportNumbers.wholeNumber(unitsText), units.magnitude <= SalesReportNumbers.maximumUnits
        else {
            throw SalesReportError.badLine(
                number,
                "Units \(SalesReportError.quoted(unitsText)) is out of range: at most "
                    + "\(SalesReportNumbers.maximumUnits) either way"
            )
        }
        for column in [SalesReportColumn.developerProceeds, .customerPrice] {
            guard SalesReportNumbers.isDecimal(value(column)) else {
                throw SalesReportError.badLine(
                    number, "\(column.rawValue) \(SalesReportError.quoted(value(column))) is not a decimal number"
                )
            }
        }
        guard let price = SalesReportNumbers.canonicalDecimal(value(.customerPrice)) else {
            throw SalesReportError.badLine(
                number,
                "Customer Price \(SalesReportError.quoted(value(.customerPrice))) has more than 15 digits before the "
                    + "point or 6 after it"
            )
        }
        for column in [SalesReportColumn.beginDate, .endDate] where !SalesReportNumbers.isDate(value(column)) {
            throw SalesReportError.badLine(
                number, "\(column.rawValue) \(SalesReportError.quoted(value(column))) is not a date MM/DD/YYYY"
            )
        }
        for column in [SalesReportColumn.sku, .productTypeIdentifier] where value(column).isEmpty {
            throw SalesReportError.badLine(number, "\(column.rawValue) is empty")
        }
        // Units kept as the number alone; the price in its canonical form.
        let canonicalPrice = Array(price.utf8)
        return SalesReportLine(
            { column in
                switch column {
                case .units: []
                case .customerPrice: canonicalPrice[...]
                default: bytes(column)
                }
            },
            units: units, fileLine: number
        )
    }
}
