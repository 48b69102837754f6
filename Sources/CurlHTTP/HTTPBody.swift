/// A request body in memory of its own, never changed after it is made: libcurl sends it from there without a copy
/// of its own (`CURLOPT_POSTFIELDS`), and one body serves every request that sends it (a redirect to Apple's other
/// environment sends the same bytes). With thousands of calls in flight, each receipt is then held once.
///
/// `@unchecked Sendable`: the bytes are written in `init` only.
public final class HTTPBody: @unchecked Sendable {
    /// At least one byte long, so libcurl always gets a pointer (an empty body has `count` 0: nothing is read).
    let storage: UnsafeMutableRawBufferPointer
    public let count: Int

    public init(_ bytes: [UInt8]) {
        count = bytes.count
        storage = .allocate(byteCount: max(1, count), alignment: 1)
        bytes.withUnsafeBytes { storage.copyMemory(from: $0) }
    }

    deinit {
        storage.deallocate()
    }
}
