import CZlib

/// Writes gzip files (RFC 1952) with zlib's deflate, as Apple serves its sales reports (`application/a-gzip`).
public enum FakeGzip {
    /// `bytes` compressed into one gzip member; nil only when zlib cannot start or fails (out of memory).
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8]? {
        guard let inputCount = UInt32(exactly: bytes.count) else { return nil }
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = bytes
        return input.withUnsafeMutableBufferPointer { inputBuffer -> [UInt8]? in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = inputCount
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return deflate(&stream, Z_FINISH)
                }
                output += chunk[0..<(chunk.count - Int(stream.avail_out))]
                switch status {
                case Z_STREAM_END: return output
                case Z_OK, Z_BUF_ERROR: continue
                default: return nil
                }
            }
        }
    }
}
