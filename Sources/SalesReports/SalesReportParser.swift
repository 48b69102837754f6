import Foundation
import AppStoreModel

/// Reads the bytes of a Summary Sales Report (see `SalesReport.parse`). Works on bytes: a line is what lies between
/// two LF bytes (a CR before the LF dropped), a field what lies between two TABs.
struct SalesReportParser {
    let maximumBytes: Int
    let maximumLines: Int

    func parse(_ input: [UInt8]) throws(SalesReportError) -> SalesReport {
        guard !input.isEmpty else { throw SalesReportError.notAReport(.empty, "the file is empty") }
        var bytes = input
        if Gunzip.isGzip(input) {
            bytes = try Gunzip.decompress(input, limit: maximumBytes)
            guard !bytes.isEmpty else { throw SalesReportError.notAReport(.empty, "the gzip file holds nothing") }
        } else if input.count > maximumBytes {
            throw SalesReportError.notAReport(.tooLarge, "it is larger than \(maximumBytes >> 20) MiB")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        try Self.recognize(bytes)
        let lines = try split(bytes)
        guard let headerLine = lines.first, !headerLine.isEmpty else {
            throw SalesReportError.notAReport(.missingColumns, "its first line is empty; it should be the header")
        }
        let header = try Header(headerLine)
        var read: [SalesReportLine] = []
        read.reserveCapacity(lines.count - 1)
        for (offset, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            read.append(try header.line(line, number: offset + 1))
        }
        return SalesReport(lines: read)
    }

    /// Refuses what is plainly something else, by its first bytes: HTML, XML, JSON, ZIP, UTF-16, binary, not UTF-8.
    static func recognize(_ bytes: [UInt8]) throws(SalesReportError) {
        let start = bytes.prefix(2048)
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
        if bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) {
            throw SalesReportError.notAReport(
                .notAReport,
                "it is a ZIP archive; Apple serves the report gzip-compressed: give the .gz file or the text"
            )
        }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            throw SalesReportError.notAReport(.notAReport, "it is UTF-16 text; Apple's reports are UTF-8")
        }
        if let nul = bytes.firstIndex(of: 0) {
            throw SalesReportError.notAReport(.notAReport, "it is binary data (a NUL byte at offset \(nul))")
        }
        if String(validating: bytes, as: UTF8.self) == nil {
            throw SalesReportError.notAReport(.notAReport, "it is not UTF-8 text")
        }
    }

    /// The lines, CR before LF dropped; at most `maximumLines`.
    private func split(_ bytes: [UInt8]) throws(SalesReportError) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.endIndex
            var line = bytes[start..<end]
            if line.last == 0x0D { line = line.dropLast() }
            lines.append(line)
            guard lines.count <= maximumLines else {
                throw SalesReportError.notAReport(.tooLarge, "it has more than \(maximumLines) lines")
            }
            start = end == bytes.endIndex ? end : end + 1
        }
        return lines
    }

    static func fields(_ line: ArraySlice<UInt8>) -> [Substring] {
        line.split(separator: 0x09, omittingEmptySubsequences: false).map {
            Substring(String(decoding: $0, as: UTF8.self))
        }
    }
}

/// The header line: where each known column is.
private struct Header {
    let count: Int
    let index: [SalesReportColumn: Int]

    init(_ line: ArraySlice<UInt8>) throws(SalesReportError) {
        let names = SalesReportParser.fields(line).map { $0.trimmingCharacters(in: .whitespaces) }
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
        let fields = SalesReportParser.fields(bytes)
        guard fields.count == count else {
            throw SalesReportError.badLine(number, "\(fields.count) fields where the header has \(count)")
        }
        let value = { (column: SalesReportColumn) -> Substring in index[column].map { fields[$0] } ?? "" }
        let unitsText = value(.units)
        guard let units = SalesReportNumbers.wholeNumber(unitsText) else {
            throw SalesReportError.badLine(number, "Units \(SalesReportError.quoted(unitsText)) is not a whole number")
        }
        for column in [SalesReportColumn.developerProceeds, .customerPrice] {
            guard SalesReportNumbers.isDecimal(value(column)) else {
                throw SalesReportError.badLine(
                    number, "\(column.rawValue) \(SalesReportError.quoted(value(column))) is not a decimal number"
                )
            }
        }
        for column in [SalesReportColumn.beginDate, .endDate] where !SalesReportNumbers.isDate(value(column)) {
            throw SalesReportError.badLine(
                number, "\(column.rawValue) \(SalesReportError.quoted(value(column))) is not a date MM/DD/YYYY"
            )
        }
        for column in [SalesReportColumn.sku, .productTypeIdentifier] where value(column).isEmpty {
            throw SalesReportError.badLine(number, "\(column.rawValue) is empty")
        }
        return SalesReportLine({ String(value($0)) }, units: units)
    }
}
