import CZlib

/// Decompresses a gzip file (RFC 1952) with zlib, handing the text on 64 KiB at a time and refusing more than `limit`
/// bytes in all. Several members one after the other (what `cat a.gz b.gz` makes) are read as one file; NUL padding
/// after the last is ignored; anything else after it, a cut-short file or a corrupt one is an error.
enum Gunzip {
    static func isGzip(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B
    }

    /// Inflates `input`, calling `consume` with each piece of text as it comes (never the whole text at once).
    /// Returns how many bytes of text there were.
    @discardableResult
    static func decompress(
        _ input: [UInt8], limit: Int, consume: (ArraySlice<UInt8>) throws(SalesReportError) -> Void
    ) throws(SalesReportError) -> Int {
        guard let inputCount = UInt32(exactly: input.count) else {
            throw SalesReportError(.tooLarge, "not a Sales Summary report: the gzip file is over 4 GiB")
        }
        var stream = z_stream()
        guard czlib_inflate_init_gzip(&stream) == Z_OK else {
            throw SalesReportError(.badCompression, "cannot start zlib to read the gzip file")
        }
        defer { inflateEnd(&stream) }
        var total = 0
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        return try input.withUnsafeBufferPointer { (inputBuffer) throws(SalesReportError) -> Int in
            guard let base = inputBuffer.baseAddress else { return 0 }
            stream.next_in = UnsafeMutablePointer(mutating: base)
            stream.avail_in = inputCount
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard total + produced <= limit else {
                    throw SalesReportError(
                        .tooLarge, "not a Sales Summary report: it decompresses to more than \(limit >> 20) MiB"
                    )
                }
                total += produced
                if produced > 0 { try consume(chunk[0..<produced]) }
                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    let rest = Int(stream.avail_in)
                    let next = input.count - rest
                    if rest == 0 || input[next...].allSatisfy({ $0 == 0 }) { return total }
                    guard rest >= 2, input[next] == 0x1F, input[next + 1] == 0x8B else {
                        throw SalesReportError(
                            .badCompression,
                            "not a Sales Summary report: \(rest) bytes of other data follow its gzip data"
                        )
                    }
                    inflateReset(&stream)
                case Z_BUF_ERROR:
                    throw SalesReportError(
                        .badCompression,
                        "not a Sales Summary report: the gzip file is truncated (it ends after \(total) "
                            + "bytes of text, before its end); download it again"
                    )
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    throw SalesReportError(
                        .badCompression, "not a Sales Summary report: the gzip data is corrupt (\(reason))"
                    )
                }
            }
        }
    }
}
