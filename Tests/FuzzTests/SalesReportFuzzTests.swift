import AppStoreModel
import CurlHTTP
import FakeAppStore
import Foundation
import Testing

@testable import SalesReports

/// Summary Sales Reports (issue 26) as `SalesReport.parse` reads them, and the App Store Connect API's answers as the
/// sales report client reads them: at least 100,000 mutated inputs each. Seeds are reports in Apple's documented
/// columns (plain, CRLF, with a byte-order mark, columns reordered, gzip-compressed) and Apple's error documents.
/// Every input becomes a report or a `SalesReportError` (`SalesReportFetchError` for answers), never a trap.
@Suite("Fuzz: sales reports")
struct SalesReportFuzzTests {
    static let header = SalesReportColumn.allCases.map(\.rawValue)

    static func line(_ values: [SalesReportColumn: String]) -> [String: String] {
        var row: [String: String] = [
            "Provider": "APPLE", "Provider Country": "US", "SKU": "coins.100", "Developer": "Example Ltd",
            "Title": "100 Coins", "Product Type Identifier": "IA1", "Units": "3", "Developer Proceeds": ".70",
            "Begin Date": "11/24/2026", "End Date": "11/24/2026", "Customer Currency": "USD", "Country Code": "US",
            "Currency of Proceeds": "USD", "Apple Identifier": "6450000001", "Customer Price": "0.99",
            "Parent Identifier": "EXAMPLEAPP", "Device": "iPhone", "Supported Platforms": "iOS",
        ]
        for (column, value) in values { row[column.rawValue] = value }
        return row
    }

    static func text(_ columns: [String], _ rows: [[String: String]], newline: String = "\n") -> [UInt8] {
        let lines = [columns.joined(separator: "\t")] + rows.map { row in
            columns.map { row[$0] ?? "" }.joined(separator: "\t")
        }
        return Array((lines.joined(separator: newline) + newline).utf8)
    }

    static var textSeeds: [[UInt8]] {
        let rows = [
            line([:]),
            line([.units: "-1", .customerPrice: "-0.99"]),
            line([.units: "2", .customerPrice: ".99"]),  // as in Apple's sample report
            line([.units: "-1", .customerPrice: "-.99"]),
            line([.sku: "pro.monthly", .productTypeIdentifier: "IAY", .countryCode: "GB", .customerCurrency: "GBP",
                  .currencyOfProceeds: "GBP", .customerPrice: "4.49", .units: "12"]),
            line([.sku: "EXAMPLEAPP", .productTypeIdentifier: "1F", .customerPrice: "0", .developerProceeds: "0"]),
        ]
        return [
            text(header, rows),
            text(header, rows, newline: "\r\n"),
            [0xEF, 0xBB, 0xBF] + text(Array(header.reversed()), rows),
            text(SalesReportColumn.required.map(\.rawValue), Array(rows.prefix(2))),
        ]
    }

    /// Mutated text, mutated text compressed, or mutated compressed text.
    enum ReportInput {
        case plain([UInt8])
        case gzip([UInt8])

        var bytes: [UInt8] {
            switch self {
            case .plain(let bytes), .gzip(let bytes): bytes
            }
        }
    }

    @Test("Summary Sales Reports: every mutated file is read or refused with SalesReportError")
    func reports() throws {
        let seeds = Self.textSeeds
        let gzipSeeds = try seeds.map { try #require(FakeGzip.compress($0)) }
        for seed in seeds + gzipSeeds { _ = try SalesReport.parse(seed) }
        let textMutator = TSVMutator(seeds: seeds)
        _ = FuzzRun.run(
            "sales report",
            make: { random -> ReportInput in
                switch random.below(10) {
                case 0..<6:
                    return .plain(textMutator.mutate(using: &random))
                case 6..<8:
                    return .gzip(FakeGzip.compress(textMutator.mutate(using: &random)) ?? [])
                default:
                    var bytes = random.pick(gzipSeeds)
                    TSVMutator.damage(&bytes, using: &random)
                    return .gzip(bytes)
                }
            },
            bytes: \.bytes,
            decode: { input, tally in
                do {
                    let report = try SalesReport.parse(input.bytes, maximumBytes: 1 << 20, maximumLines: 1000)
                    _ = report.inAppLines.map(\.customerPriceValue)
                    for line in report.lines where !Self.isSQLPrice(line.customerPrice) || line.fileLine < 2 {
                        Issue.record("line \(line.fileLine): price \(line.customerPrice) is not what SQL accepts")
                    }
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }

    /// `^-?[0-9]{1,15}(\.[0-9]{1,6})?$`: the prices sql/functions/receipt_reconcile.sql accepts.
    static func isSQLPrice(_ text: String) -> Bool {
        let unsigned = text.hasPrefix("-") ? text.dropFirst() : text[...]
        let parts = unsigned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = { (part: Substring, most: Int) in
            (1...most).contains(part.utf8.count) && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }
        return digits(parts[0], 15) && (parts.count == 1 || digits(parts[1], 6))
    }

    @Test("App Store Connect answers: every mutated answer is a report, notReady, or a SalesReportFetchError")
    func answers() throws {
        let documents = [
            #"{"errors":[{"id":"5f3c","status":"404","code":"NOT_FOUND","title":"The specified resource does not exist","detail":"There were no sales for the date specified."}]}"#,
            #"{"errors":[{"status":"401","code":"NOT_AUTHORIZED","title":"Authentication credentials are missing or invalid.","detail":"Provide a properly configured and signed bearer token."}]}"#,
            #"{"errors":[{"status":"400","code":"PARAMETER_ERROR.INVALID","detail":"Invalid date.","source":{"parameter":"filter[reportDate]"}}]}"#,
        ].map { Array($0.utf8) }
        let statuses = [200, 400, 401, 403, 404, 404, 404, 429, 500, 503, 302]
        let mutator = JSONMutator(seeds: documents)
        _ = FuzzRun.run(
            "sales report answer",
            make: { random in HTTPResponse(status: random.pick(statuses), body: mutator.mutate(using: &random)) },
            bytes: \.body,
            decode: { response, tally in
                do {
                    _ = try SalesReportClient.interpret(response, maxReportBytes: 1 << 20)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }
}

/// Makes hostile variants of tab-separated reports: bit flips, bytes inserted (tabs, line breaks, signs, digits,
/// invalid UTF-8, NUL) and deleted, fields replaced by hostile numbers and dates, lines duplicated or cut, tabs removed,
/// truncation. One mutation, sometimes two.
struct TSVMutator {
    static let structuralBytes: [UInt8] = Array("\t\n\r-+.0123456789/ e,\"".utf8) + [0x00, 0xFF, 0xC3, 0xEF, 0xBB]
    static let hostileFields = [
        "99999999999999999999", "-9223372036854775808", "9223372036854775807", "-", ".", "1e9", "--1", "1.0.0", "",
        "\u{663}", "0x10", " 1", "1 ", "+", "00/00/0000", "12/31/99999", "02/30/2026", "1.00", "-0.00",
        String(repeating: "9", count: 400), "IA1\u{1B}[2J",
    ]

    let seeds: [[UInt8]]

    func mutate(using random: inout FuzzRandom) -> [UInt8] {
        var bytes = random.pick(seeds)
        mutateOnce(&bytes, using: &random)
        if random.chance(20) { mutateOnce(&bytes, using: &random) }
        return bytes
    }

    private func mutateOnce(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        switch random.below(7) {
        case 0: Self.damage(&bytes, using: &random)
        case 1: replaceField(&bytes, using: &random)
        case 2: duplicateLine(&bytes, using: &random)
        case 3:
            guard let tab = bytes.indices.filter({ bytes[$0] == 0x09 }).randomElement(using: &random) else { return }
            bytes.remove(at: tab)
        case 4:
            let at = random.below(bytes.count + 1)
            bytes.insert(random.pick(Self.structuralBytes), at: at)
        case 5: bytes = Array(bytes.prefix(random.below(bytes.count + 1)))
        default: replaceField(&bytes, using: &random)
        }
    }

    /// A bit flipped, a byte deleted, or the end cut off: for compressed bytes as much as for text.
    static func damage(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        guard !bytes.isEmpty else { return }
        switch random.below(3) {
        case 0: bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
        case 1: bytes.remove(at: random.below(bytes.count))
        default: bytes = Array(bytes.prefix(random.below(bytes.count)))
        }
    }

    /// One field (between tabs or line ends) replaced by a hostile value.
    private func replaceField(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        let bounds = [-1] + bytes.indices.filter { bytes[$0] == 0x09 || bytes[$0] == 0x0A } + [bytes.count]
        guard bounds.count > 2 else { return }
        let index = random.below(bounds.count - 1)
        let start = bounds[index] + 1
        let end = max(start, bounds[index + 1])
        bytes.replaceSubrange(start..<end, with: Array(random.pick(Self.hostileFields).utf8))
    }

    private func duplicateLine(_ bytes: inout [UInt8], using random: inout FuzzRandom) {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return }
        let copies = random.chance(5) ? 2000 : 1
        let line = Array(lines[random.below(lines.count)])
        bytes += Array(repeating: line + [0x0A], count: copies).flatMap { $0 }
    }
}
