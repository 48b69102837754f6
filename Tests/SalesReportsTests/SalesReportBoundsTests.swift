import AppStoreModel
import FakeAppStore
import Foundation
import Testing

@testable import SalesReports

/// What a hostile or broken report costs to refuse: lines and headers past their bounds, the price in the one form
/// `receipt_reconcile` accepts, each line's number in the file, and report files read to a bound.
@Suite("Sales report bounds")
struct SalesReportBoundsTests {
    typealias Parser = SalesReportParserTests

    /// Apple's header, a good line, then `line`.
    static func report(then line: [UInt8]) -> [UInt8] {
        Parser.bytes(Parser.text([Parser.row()])) + line + [0x0A]
    }

    @Test("a line of 10 MiB of tabs (10 KB gzip-compressed) is refused as too long, naming the line")
    func lineOfTabs() throws {
        let gzip = try #require(FakeGzip.compress(Self.report(then: [UInt8](repeating: 0x09, count: 10 << 20))))
        #expect(gzip.count < 64 << 10)
        let error = Parser.error(gzip)
        #expect(error?.kind == .tooLarge)
        #expect(error?.line == 3)
        #expect(error?.message == "not a Sales Summary report: line 3 is longer than 64 KiB")
        // The same as the header: line 1.
        let header = try #require(FakeGzip.compress([UInt8](repeating: 0x09, count: 1 << 20)))
        #expect(Parser.error(header)?.message == "not a Sales Summary report: line 1 is longer than 64 KiB")
        #expect(Parser.error(header)?.line == 1)
    }

    @Test("a line of exactly 64 KiB is read (CRLF or LF, last or not); one byte more is refused")
    func lineAtTheBound() throws {
        let plain = Parser.bytes(Parser.text([Parser.row()]))
        let line = try #require(plain.split(separator: 0x0A).last)
        let title = Parser.bytes("100 Coins")
        let padding = SalesReportParser.maximumLineBytes - line.count
        var long = Array(line)
        let at = try #require(long.firstRange(of: title)).upperBound
        long.insert(contentsOf: [UInt8](repeating: 0x41, count: padding), at: at)
        #expect(long.count == 64 << 10)
        for ending in [[0x0A], [0x0D, 0x0A], []] as [[UInt8]] {
            let report = try SalesReport.parse(Self.report(then: long).dropLast() + ending)
            #expect(report.lines.count == 2)
            #expect(report.lines.last?.title.utf8.count == title.count + padding)
        }
        let longer = Self.report(then: long + [0x41])
        #expect(Parser.error(longer)?.message == "not a Sales Summary report: line 3 is longer than 64 KiB")
        #expect(Parser.error(try #require(FakeGzip.compress(longer)))?.line == 3)
        #expect(Parser.error(Array(longer.dropLast()))?.line == 3)  // no line end
    }

    @Test("a header of more than 64 columns, and a line with more fields than the header, are refused")
    func columns() {
        let names = Parser.header + (1...36).map { "Extra \($0)" }
        #expect(names.count == 64)
        #expect(throws: Never.self) { try SalesReport.parse(Parser.bytes(Parser.text([Parser.row()], columns: names))) }
        let error = Parser.error(Parser.bytes(Parser.text([Parser.row()], columns: names + ["Extra 37"])))
        #expect(error?.kind == .missingColumns)
        #expect(error?.message == "not a Sales Summary report: its first line has more than 64 columns "
            + "(Apple's reports have 28)")
        let tabs = Self.report(then: Parser.bytes(Parser.text([Parser.row()]).split(separator: "\n")[1] + "\t\t\t"))
        #expect(Parser.error(tabs)?.message == "line 3: more than 28 fields where the header has 28")
    }

    @Test("bytes that are not UTF-8, or a NUL, past the first 2 KiB are refused with their line or offset")
    func textCheckedPerLine() throws {
        let good = Parser.bytes(Parser.text(Array(repeating: Parser.row(), count: 50)))
        #expect(good.count > 3 * SalesReportParser.recognizedBytes)
        let bad = good + Parser.bytes("coins.100\t") + [0xC3, 0x28] + [0x0A]
        for input in [bad, try #require(FakeGzip.compress(bad))] {
            #expect(Parser.error(input)?.message == "not a Sales Summary report: it is not UTF-8 text (line 52)")
        }
        let nul = good + Parser.bytes("coins.100\t") + [0x00, 0x0A]
        #expect(Parser.error(nul)?.message == "not a Sales Summary report: it is binary data (a NUL byte at offset "
            + "\(good.count + 10))")
        let withMark = [0xEF, 0xBB, 0xBF] + nul
        #expect(Parser.error(try #require(FakeGzip.compress(withMark)))?.message.hasSuffix("offset \(good.count + 10))") == true)
    }

    @Test("the customer price in canonical decimal form: what receipt_reconcile's price accepts")
    func canonicalPrice() throws {
        let cases: [(String, String)] = [
            (".99", "0.99"), ("-.5", "-0.5"), ("0.99", "0.99"), ("-0.99", "-0.99"), ("012.50", "12.50"), ("4", "4"),
            ("-0.00", "0.00"), ("-0", "0"), ("000", "0"), (".0", "0.0"), ("1.2345670000", "1.234567"),
            ("999999999999999.999999", "999999999999999.999999"), ("0000000000000001", "1"),
        ]
        let rows = cases.map { Parser.row(units: "1", price: $0.0) }
        let report = try SalesReport.parse(Parser.bytes(Parser.text(rows)))
        #expect(report.lines.map(\.customerPrice) == cases.map(\.1))
        let sqlPrice = /^-?[0-9]{1,15}(\.[0-9]{1,6})?$/  // sql/functions/receipt_reconcile.sql
        for line in report.lines {
            #expect(line.customerPrice.wholeMatch(of: sqlPrice) != nil, "\(line.customerPrice)")
        }
        for price in ["1000000000000000", "0.1234567", "-1.0000001"] {
            let error = Parser.error(Parser.bytes(Parser.text([Parser.row(price: price)])))
            #expect(error?.message == "line 2: Customer Price '\(price)' has more than 15 digits before the point or 6 "
                + "after it")
        }
        let byHand = SalesReportLine(
            sku: "a", productTypeIdentifier: "IA1", units: 1, customerPrice: "-.5", customerCurrency: "USD",
            countryCode: "US", beginDate: "11/24/2026", endDate: "11/24/2026"
        )
        #expect(byHand.customerPrice == "-0.5")
    }

    @Test("each line knows its line number in the file: header, blank lines, CRLF, a byte-order mark, gzip")
    func fileLines() throws {
        let text = Parser.text([Parser.row(), Parser.row(sku: "coins.500"), Parser.row(sku: "coins.900")])
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.insert("", at: 2)
        lines.insert("\r", at: 4)
        let bytes = [0xEF, 0xBB, 0xBF] + Parser.bytes(lines.joined(separator: "\n"))
        for input in [bytes, try #require(FakeGzip.compress(bytes))] {
            let report = try SalesReport.parse(input)
            #expect(report.lines.map(\.sku) == ["coins.100", "coins.500", "coins.900"])
            #expect(report.lines.map(\.fileLine) == [2, 4, 6])
        }
    }

    @Test("a line's columns survive being set, longer and shorter, empty and past 127 bytes")
    func packedColumns() throws {
        var line = try #require(try SalesReport.parse(Parser.bytes(Parser.text([Parser.row()]))).lines.first)
        let long = String(repeating: "é", count: 300)
        line.title = long
        line.sku = ""
        line.orderType = "X"
        #expect(line.title == long && line.sku.isEmpty && line.orderType == "X")
        #expect(line.developer == "Example Ltd" && line.device == "iPhone" && line.customerPrice == "0.99")
        line.title = "100 Coins"
        line.sku = "coins.100"
        line.orderType = ""
        #expect(line == (try SalesReport.parse(Parser.bytes(Parser.text([Parser.row()])))).lines.first)
    }

    // MARK: readFile

    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sales-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func readError(_ path: String, maximumBytes: Int) -> SalesReportError? {
        do {
            _ = try SalesReport.readFile(path: path, maximumBytes: maximumBytes)
            return nil
        } catch {
            return error
        }
    }

    @Test("readFile: a regular file up to the bound is read; one byte more is refused, naming the bound")
    func readRegularFile() throws {
        let bytes = Parser.bytes(Parser.text([Parser.row()]))
        let path = try Self.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try SalesReport.readFile(path: path, maximumBytes: bytes.count) == bytes)
        #expect(try SalesReport.parse(SalesReport.readFile(path: path)).lines.count == 1)
        let error = Self.readError(path, maximumBytes: bytes.count - 1)
        #expect(error?.kind == .tooLarge)
        #expect(error?.message == "not a Sales Summary report: \(path) holds more than \(bytes.count - 1) bytes, the "
            + "most a report file is read to (a daily Sales Summary report is a few MiB)")
    }

    @Test("readFile: endless /dev/zero is refused at the bound")
    func readEndless() {
        let error = Self.readError("/dev/zero", maximumBytes: 1 << 20)
        #expect(error?.kind == .tooLarge)
        #expect(error?.message.contains("/dev/zero holds more than 1 MiB") == true)
    }

    /// Reads `/dev/fd/N` of a pipe `bytes` are written to (what `--report <(zcat report.gz)` gives).
    static func readPipe(_ bytes: [UInt8], maximumBytes: Int) throws -> Result<[UInt8], SalesReportError> {
        let pipe = Pipe()
        let writer = Thread {
            try? pipe.fileHandleForWriting.write(contentsOf: Data(bytes))
            try? pipe.fileHandleForWriting.close()
        }
        writer.start()
        defer { try? pipe.fileHandleForReading.close() }
        let path = "/dev/fd/\(pipe.fileHandleForReading.fileDescriptor)"
        return Result { () throws(SalesReportError) in try SalesReport.readFile(path: path, maximumBytes: maximumBytes) }
    }

    @Test("readFile: a pipe (process substitution) is read to its end; more than the bound is refused")
    func readPipe() throws {
        let bytes = Parser.bytes(Parser.text(Array(repeating: Parser.row(), count: 2000)))
        #expect(bytes.count > 256 << 10)
        #expect(try Self.readPipe(bytes, maximumBytes: bytes.count).get() == bytes)
        let refused = try Self.readPipe(bytes, maximumBytes: 256 << 10)
        #expect(throws: SalesReportError.self) { try refused.get() }
        if case .failure(let error) = refused {
            #expect(error.kind == .tooLarge)
            #expect(error.message.contains("holds more than 262144 bytes"))
        }
    }

    @Test("readFile: a missing file or a directory says so")
    func readUnreadable() {
        let missing = Self.readError("/nonexistent/report.txt.gz", maximumBytes: 1 << 20)
        #expect(missing?.kind == .unreadable)
        #expect(missing?.message == "/nonexistent/report.txt.gz cannot be opened: No such file or directory")
        let directory = Self.readError(NSTemporaryDirectory(), maximumBytes: 1 << 20)
        #expect(directory?.kind == .unreadable)
        #expect(directory?.message.contains("is a directory") == true)
    }
}
