import AppStoreModel
import FakeAppStore
import Testing

@testable import SalesReports

/// Summary Sales Reports read by header name, refunds, gzip and plain text, and every kind of file that is not one.
@Suite("Sales report parser")
struct SalesReportParserTests {
    /// Apple's header, in Apple's order.
    static let header = SalesReportColumn.allCases.map(\.rawValue)

    /// A line with Apple's columns: an in-app purchase of `sku` unless `type` says otherwise.
    static func row(
        sku: String = "coins.100", type: String = "IA1", units: String = "2", proceeds: String = ".70",
        price: String = ".99", currency: String = "USD", country: String = "US", date: String = "11/24/2026"
    ) -> [String: String] {
        [
            "Provider": "APPLE", "Provider Country": "US", "SKU": sku, "Developer": "Example Ltd", "Title": "100 Coins",
            "Version": "", "Product Type Identifier": type, "Units": units, "Developer Proceeds": proceeds,
            "Begin Date": date, "End Date": date, "Customer Currency": currency, "Country Code": country,
            "Currency of Proceeds": currency, "Apple Identifier": "6450000001", "Customer Price": price,
            "Promo Code": "", "Parent Identifier": "EXAMPLEAPP", "Subscription": "", "Period": "", "Category": "Games",
            "CMB": "", "Device": "iPhone", "Supported Platforms": "iOS", "Proceeds Reason": "", "Preserved Pricing": "",
            "Client": "", "Order Type": "",
        ]
    }

    /// Tab-separated text with `columns` as its header and `rows` below, lines ended by `newline`.
    static func text(_ rows: [[String: String]], columns: [String] = header, newline: String = "\n") -> String {
        ([columns.joined(separator: "\t")] + rows.map { row in columns.map { row[$0] ?? "" }.joined(separator: "\t") })
            .joined(separator: newline) + newline
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The error `parse` throws for `bytes`.
    static func error(
        _ bytes: [UInt8], maximumBytes: Int = SalesReport.maximumBytes, maximumLines: Int = SalesReport.maximumLines
    ) -> SalesReportError? {
        do {
            _ = try SalesReport.parse(bytes, maximumBytes: maximumBytes, maximumLines: maximumLines)
            return nil
        } catch {
            return error
        }
    }

    @Test("columns are found by their names, in any order")
    func reorderedColumns() throws {
        let shuffled = Self.header.reversed() + ["A Column Apple Adds Later"]
        let rows = [Self.row(), Self.row(sku: "MyApp", type: "1F", units: "5", proceeds: "0", price: "0")]
        let report = try SalesReport.parse(Self.bytes(Self.text(rows, columns: Array(shuffled))))
        #expect(report.lines.count == 2)
        let line = try #require(report.lines.first)
        #expect(line.sku == "coins.100")
        #expect(line.units == 2)
        #expect(line.customerPrice == "0.99")  // ".99" in the file, made canonical
        #expect(line.developerProceeds == ".70")
        #expect(line.countryCode == "US")
        #expect(line.customerCurrency == "USD")
        #expect(line.beginDate == "11/24/2026")
        #expect(line.parentIdentifier == "EXAMPLEAPP")
        #expect(line.device == "iPhone")
        #expect(report.inAppLines.map(\.sku) == ["coins.100"])
        var expected = SalesReportLine(
            sku: "coins.100", productTypeIdentifier: "IA1", units: 2, customerPrice: ".99", customerCurrency: "USD",
            countryCode: "US", beginDate: "11/24/2026", endDate: "11/24/2026", developerProceeds: ".70",
            appleIdentifier: "6450000001", title: "100 Coins", parentIdentifier: "EXAMPLEAPP", fileLine: 2
        )
        (expected.provider, expected.providerCountry, expected.developer) = ("APPLE", "US", "Example Ltd")
        (expected.category, expected.device, expected.supportedPlatforms) = ("Games", "iPhone", "iOS")
        #expect(line == expected)
    }

    @Test("optional columns a file lacks are empty; the required ones are enough")
    func requiredColumnsOnly() throws {
        let columns = SalesReportColumn.required.map(\.rawValue)
        let report = try SalesReport.parse(Self.bytes(Self.text([Self.row()], columns: columns)))
        let line = try #require(report.lines.first)
        #expect(line.sku == "coins.100")
        #expect(line.orderType.isEmpty && line.provider.isEmpty && line.title.isEmpty)
    }

    @Test("refund lines: negative units and customer price")
    func refunds() throws {
        let rows = [Self.row(units: "3"), Self.row(units: "-1", price: "-0.99"), Self.row(units: "-2.00", price: "-.99")]
        let report = try SalesReport.parse(Self.bytes(Self.text(rows)))
        #expect(report.lines.map(\.units) == [3, -1, -2])
        #expect(report.lines[1].customerPriceValue == -report.lines[0].customerPriceValue)
        #expect(report.lines[2].customerPriceValue == report.lines[1].customerPriceValue)
        #expect(report.lines.reduce(0) { $0 + $1.units } == 0)
    }

    @Test("gzip and plain text read the same; several gzip members read as one file")
    func gzipAndPlain() throws {
        let text = Self.text([Self.row(), Self.row(sku: "sub.monthly", type: "IAY", country: "GB", date: "11/24/2026")])
        let plain = try SalesReport.parse(Self.bytes(text))
        let gzip = try #require(FakeGzip.compress(Self.bytes(text)))
        #expect(gzip.starts(with: [0x1F, 0x8B]))
        let compressed = try SalesReport.parse(gzip)
        #expect(compressed.lines == plain.lines)
        #expect(compressed.inAppLines.count == 2)

        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let first = try #require(FakeGzip.compress(Self.bytes(lines[0...1].joined(separator: "\n") + "\n")))
        let second = try #require(FakeGzip.compress(Self.bytes(lines[2...].joined(separator: "\n"))))
        #expect(try SalesReport.parse(first + second).lines == plain.lines)
    }

    @Test("CRLF line ends, a byte-order mark, trailing newlines or none")
    func lineEnds() throws {
        let expected = try SalesReport.parse(Self.bytes(Self.text([Self.row(), Self.row(units: "-1", price: "-.99")])))
        let crlf = Self.text([Self.row(), Self.row(units: "-1", price: "-.99")], newline: "\r\n")
        #expect(try SalesReport.parse(Self.bytes(crlf)).lines == expected.lines)
        #expect(try SalesReport.parse([0xEF, 0xBB, 0xBF] + Self.bytes(crlf)).lines == expected.lines)
        #expect(try SalesReport.parse(Self.bytes(crlf + "\r\n\n\n")).lines == expected.lines)
        let noFinalNewline = String(Self.text([Self.row(), Self.row(units: "-1", price: "-.99")]).dropLast())
        #expect(try SalesReport.parse(Self.bytes(noFinalNewline)).lines == expected.lines)
        #expect(try SalesReport.parse(Self.bytes(Self.text([]))).lines.isEmpty)
    }

    @Test("in-app product types follow Apple's list; apps, updates and restores are not in-app sales")
    func productTypes() throws {
        let types = ["IA1", "IA1-M", "IA9", "IA9-M", "IAY", "IAY-M", "IAC", "FI1", "1", "1F", "7", "3", "IA3", "F1", "1-B"]
        let report = try SalesReport.parse(Self.bytes(Self.text(types.map { Self.row(type: $0) })))
        #expect(report.inAppLines.map(\.productTypeIdentifier) == Array(types.prefix(8)))
    }

    @Test("an HTML page, JSON, XML, a ZIP archive, binary data, UTF-16 and empty files say what they are")
    func notReports() {
        let cases: [([UInt8], SalesReportError.Kind, String)] = [
            (Self.bytes("<!DOCTYPE html><html><body>Sign in</body></html>"), .notAReport, "it is HTML"),
            (Self.bytes("  \n<html>"), .notAReport, "it is HTML"),
            (Self.bytes(#"{"errors":[{"status":"404","code":"NOT_FOUND"}]}"#), .notAReport, "it is JSON"),
            (Self.bytes("<?xml version=\"1.0\"?><a/>"), .notAReport, "XML"),
            ([0x50, 0x4B, 0x03, 0x04, 0x14, 0x00], .notAReport, "ZIP archive"),
            ([0x53, 0x4B, 0x55, 0x00, 0x01], .notAReport, "binary data"),
            ([0xFF, 0xFE, 0x53, 0x00], .notAReport, "UTF-16"),
            (Self.bytes("SKU\tUnits\n") + [0xC3, 0x28], .notAReport, "not UTF-8"),
            ([], .empty, "the file is empty"),
            (FakeGzip.compress([]) ?? [], .empty, "gzip file holds nothing"),
        ]
        for (bytes, kind, words) in cases {
            let error = Self.error(bytes)
            #expect(error?.kind == kind, "\(words)")
            #expect(error?.message.hasPrefix("not a Sales Summary report: ") == true, "\(words)")
            #expect(error?.message.contains(words) == true, "\(error?.message ?? "no error") should say \(words)")
        }
    }

    @Test("a truncated or corrupt gzip file, or other data after it")
    func badGzip() throws {
        let gzip = try #require(FakeGzip.compress(Self.bytes(Self.text(Array(repeating: Self.row(), count: 50)))))
        for cut in [2, 10, gzip.count / 2, gzip.count - 4, gzip.count - 1] {
            let error = Self.error(Array(gzip.prefix(cut)))
            #expect(error?.kind == .badCompression, "cut at \(cut)")
            #expect(error?.message.contains("truncated") == true || error?.message.contains("corrupt") == true)
        }
        #expect(Self.error(Array(gzip.prefix(gzip.count - 4)))?.message.contains("truncated") == true)
        var corrupt = gzip
        corrupt[gzip.count - 6] ^= 0xFF  // the CRC-32 of the text
        #expect(Self.error(corrupt)?.message.contains("corrupt") == true)
        #expect(Self.error(gzip + Self.bytes("trailing"))?.message.contains("other data follow") == true)
        #expect(try SalesReport.parse(gzip + [0, 0, 0]).lines.count == 50)
    }

    @Test("a header without the report's columns names the missing ones")
    func missingColumns() {
        let columns = Self.header.filter { $0 != "SKU" && $0 != "Units" }
        let error = Self.error(Self.bytes(Self.text([Self.row()], columns: columns)))
        #expect(error?.kind == .missingColumns)
        #expect(error?.message == "not a Sales Summary report: missing columns SKU, Units")
        let csv = Self.error(Self.bytes(Self.header.joined(separator: ",") + "\n"))
        #expect(csv?.message.contains("comma-separated") == true)
        let twice = Self.error(Self.bytes(Self.text([], columns: Self.header + ["Units"])))
        #expect(twice?.message.contains("names the column Units twice") == true)
        #expect(Self.error(Self.bytes("\n" + Self.text([Self.row()])))?.message.contains("first line is empty") == true)
    }

    @Test("a bad number, date or line length names the line")
    func badLines() {
        let good = Self.row()
        let cases: [([String: String], String)] = [
            (Self.row(units: "x"), "line 3: Units 'x' is not a whole number"),
            (Self.row(units: "1.5"), "line 3: Units '1.5' is not a whole number"),
            (
                Self.row(units: "99999999999999999999"),
                "line 3: Units '99999999999999999999' is out of range: at most 999999999999999 either way"
            ),
            (Self.row(units: ""), "line 3: Units '' is not a whole number"),
            (Self.row(price: "0,99"), "line 3: Customer Price '0,99' is not a decimal number"),
            (Self.row(price: "1e3"), "line 3: Customer Price '1e3' is not a decimal number"),
            (Self.row(proceeds: "-"), "line 3: Developer Proceeds '-' is not a decimal number"),
            (Self.row(date: "2026-11-24"), "line 3: Begin Date '2026-11-24' is not a date MM/DD/YYYY"),
            (Self.row(date: "13/24/2026"), "line 3: Begin Date '13/24/2026' is not a date MM/DD/YYYY"),
            (Self.row(sku: ""), "line 3: SKU is empty"),
        ]
        for (row, message) in cases {
            let error = Self.error(Self.bytes(Self.text([good, row])))
            #expect(error?.kind == .badLine)
            #expect(error?.line == 3)
            #expect(error?.message == message)
        }
        let short = Self.text([good]) + "APPLE\tUS\tcoins.100\n"
        #expect(Self.error(Self.bytes(short))?.message == "line 3: 3 fields where the header has 28")
        let control = Self.error(Self.bytes(Self.text([Self.row(units: "1\u{1B}[2J")])))
        #expect(control?.message == #"line 2: Units '1\u{1b}[2J' is not a whole number"#)
    }

    @Test("text and line counts past the bounds are refused")
    func bounds() throws {
        let text = Self.bytes(Self.text(Array(repeating: Self.row(), count: 20)))
        #expect(throws: Never.self) { try SalesReport.parse(text, maximumBytes: text.count, maximumLines: 21) }
        let tooManyLines = Self.error(text, maximumBytes: 1 << 20, maximumLines: 20)
        #expect(tooManyLines?.kind == .tooLarge)
        #expect(tooManyLines?.message.contains("more than 20 lines") == true)
        let gzip = try #require(FakeGzip.compress(Self.bytes(Self.text([])) + [UInt8](repeating: 0x0A, count: 3 << 20)))
        let bomb = Self.error(gzip, maximumBytes: 2 << 20, maximumLines: 4 << 20)
        #expect(bomb?.kind == .tooLarge)
        #expect(bomb?.message == "not a Sales Summary report: it decompresses to more than 2 MiB")
        let plain = Self.error(text, maximumBytes: text.count - 1, maximumLines: 100)
        #expect(plain?.kind == .tooLarge)
    }
}
