#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Apple's daily (or weekly, monthly, yearly) Summary Sales Report, read: every line, and the lines of in-app purchases
/// and subscriptions.
///
/// Bounds. A daily Summary Sales Report of even a very large developer is a few MiB of text (a line is about 250
/// bytes, one per product, storefront, price and device a day), well under a MiB compressed. The defaults leave ten
/// times that and more, and keep what reading one costs well inside a worker's 512 MiB
/// (deploy/kubernetes/deployment.yaml): at most `maximumCompressedBytes` (16 MiB) downloaded
/// (`SalesReportClient`), at most `maximumBytes` (64 MiB) of text, compressed or not, at most `maximumLines` lines of
/// at most 64 KiB each with at most 64 columns. The text is read a line at a time as it is decompressed, and a line
/// is kept as its text packed in one allocation, so memory is the input, plus about the text kept, plus 64 KiB. Peak
/// resident memory measured for `readFile` then `parse` (a process doing only that): 170 MiB for a 64 MiB
/// uncompressed file of 334,000 lines (the worst the bounds let in), 107 MiB for the same gzip-compressed, 19 MiB to
/// refuse a 10 MiB line of tabs (10 KB compressed), 82 MiB to refuse /dev/zero.
public struct SalesReport: Sendable {
    public var lines: [SalesReportLine]

    public init(lines: [SalesReportLine]) {
        self.lines = lines
    }

    /// The lines whose product type is an in-app purchase or a subscription (`SalesReportLine.isInAppPurchase`).
    public var inAppLines: [SalesReportLine] {
        lines.filter(\.isInAppPurchase)
    }

    /// Text past this many bytes (after decompression, or a file as given) is refused.
    public static let maximumBytes = 64 << 20
    /// A compressed report past this many bytes is not downloaded (`SalesReportClient`'s default).
    public static let maximumCompressedBytes = 16 << 20
    /// Lines past this many are refused (64 MiB of Apple's lines is about 270,000).
    public static let maximumLines = 400_000

    /// Reads a Summary Sales Report as Apple serves it (gzip-compressed) or decompressed: tab-separated UTF-8 text, a
    /// header line, one line per aggregate. Columns are found by their header names (`SalesReportColumn`), in any
    /// order; a byte-order mark, CRLF line ends and blank lines at the end are accepted. Anything else is an error
    /// saying what the input is not, or which line is wrong.
    public static func parse(_ bytes: [UInt8]) throws(SalesReportError) -> SalesReport {
        try parse(bytes, maximumBytes: maximumBytes, maximumLines: maximumLines)
    }

    /// `parse` with other bounds.
    public static func parse(
        _ bytes: [UInt8], maximumBytes: Int, maximumLines: Int
    ) throws(SalesReportError) -> SalesReport {
        try SalesReportParser(maximumBytes: maximumBytes, maximumLines: maximumLines).parse(bytes)
    }

    /// The bytes of the file at `path` (a regular file, a pipe, process substitution's /dev/fd/N), for `parse`: at
    /// most `maximumBytes`. A larger file, or endless input such as /dev/zero, is refused once `maximumBytes` + 1 bytes
    /// have been read (a regular file by its size, before reading), with an error naming the bound; so is a file that
    /// cannot be opened or read, and a directory.
    public static func readFile(
        path: String, maximumBytes: Int = SalesReport.maximumBytes
    ) throws(SalesReportError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw SalesReportError(.unreadable, "\(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let tooLarge = SalesReportError(
            .tooLarge,
            "not a Sales Summary report: \(path) holds more than \(size(maximumBytes)), the most a report file is "
                + "read to (a daily Sales Summary report is a few MiB)"
        )
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw SalesReportError(.unreadable, "\(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        let type = status.st_mode & S_IFMT
        guard type != S_IFDIR else { throw SalesReportError(.unreadable, "\(path) is a directory, not a report file") }
        var expected = 0
        if type == S_IFREG {
            guard status.st_size <= maximumBytes else { throw tooLarge }
            expected = Int(status.st_size)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(expected + 1)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let wanted = min(buffer.count, maximumBytes + 1 - bytes.count)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, wanted) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SalesReportError(.unreadable, "\(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            guard bytes.count <= maximumBytes else { throw tooLarge }
        }
    }

    /// "64 MiB", or "1000 bytes" for a bound that is not whole MiB.
    private static func size(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
