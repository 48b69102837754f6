import CCurl
import CCurlMemory

/// Process-wide libcurl initialisation.
public enum CurlGlobal {
    /// The upload buffer libcurl gives an easy handle that sends a request through it (`CURLOPT_UPLOAD_BUFFERSIZE`):
    /// libcurl's minimum, and the size of the pool's slots.
    public static let uploadBufferBytes = 16_384

    /// Slots the upload-buffer pool reserves address space for: one per easy handle holding an upload buffer (a call
    /// in flight, or an idle handle kept for reuse), so 65,536 at once (1 GiB of address space, made usable 16 MiB at
    /// a time as they are first needed; past it, buffers come from malloc).
    public static let uploadBufferSlots = 65_536

    /// Whether the linked libcurl gives each transfer that sends a body an upload buffer of its own
    /// (`CURLOPT_UPLOAD_BUFFERSIZE` bytes, which the pool serves): before 8.7.0. From 8.7.0 a multi handle lends one
    /// upload buffer to its transfers in turn, and data waiting to be sent stays in libcurl's own buffers (16 KiB
    /// chunks over HTTP/2, a few bytes too large for the pool), so the pool serves a few buffers, not one per call
    /// (seen with 8.14.1).
    public static let libcurlGivesEachTransferAnUploadBuffer = linkedVersionNumber < 0x08_07_00

    /// The libcurl linked at run time, as `0xXXYYZZ` (8.7.0 is `0x080700`); 0 when libcurl does not say.
    static let linkedVersionNumber: UInt32 = {
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return 0 }
        return info.pointee.version_num
    }()

    /// The one initialisation's `CURLcode`; `ccurl_global_init_pooled` itself runs once per process whoever calls it.
    private static let initResult: Int32 = ccurl_global_init_pooled(
        Int(CURL_GLOBAL_DEFAULT), uploadBufferBytes, uploadBufferSlots
    )

    /// Initialises libcurl exactly once per process (`curl_global_init_mem(CURL_GLOBAL_DEFAULT, …)`, with upload
    /// buffers from the pool `CCurlMemory` describes, kept only if libcurl then allocates from it); later calls do
    /// nothing. libcurl is never cleaned up (`curl_global_cleanup`), as pooled buffers may be held to the end.
    ///
    /// Call it from `main` before starting threads. `CurlMultiTransport.init` calls it too, so a forgotten
    /// call cannot leave libcurl to initialise itself lazily (and racily) inside `curl_multi_init`.
    public static func initialize() {
        _ = initResult
    }

    /// The `CURLcode` returned by the one initialisation call (0 on success).
    public static var initializationCode: Int32 {
        initResult
    }

    /// How the upload-buffer pool stands: slots held now (by calls in flight and idle handles), at most at once, and
    /// requests it could not serve.
    public struct UploadBufferPool: Sendable, Equatable {
        public var slotBytes: Int
        public var capacity: Int
        public var usable: Int
        public var inUse: Int
        public var highWater: Int
        public var fallbacks: UInt64
        /// Slots given back and not handed out again.
        public var returned: Int
        /// Slots whose pages went back to the system, in all (`releaseIdleMemory`).
        public var released: UInt64
        /// Upload buffers whose pages went back to the system as soon as their request's body was sent, in all
        /// (`CurlMultiTransport.Configuration.uploadBufferReleaseThreshold`).
        public var discarded: UInt64
    }

    /// The pool's figures; all zero when libcurl does not allocate from it (it could not be reserved, or libcurl had
    /// been initialised before), and then libcurl allocates from malloc alone.
    public static var uploadBufferPool: UploadBufferPool {
        initialize()
        var stats = ccurl_slot_pool_stats()
        ccurl_global_pool_read_stats(&stats)
        return UploadBufferPool(
            slotBytes: stats.slot_bytes, capacity: stats.capacity, usable: stats.usable,
            inUse: stats.in_use, highWater: stats.high_water, fallbacks: stats.fallbacks,
            returned: stats.returned, released: stats.released, discarded: stats.discarded
        )
    }

    /// Gives the pages of upload buffers nothing took since the previous call back to the system, all but the
    /// `keep` given back last (a pooled buffer's pages stay resident once written, for its next use); with
    /// `heap`, also malloc's free memory (`malloc_trim`, which walks the whole heap: for after a burst, not for
    /// every call). Returns the buffers released.
    @discardableResult
    public static func releaseIdleMemory(keepingBuffers keep: Int, heap: Bool) -> Int {
        initialize()
        let released = ccurl_global_pool_release_idle(max(0, keep))
        if heap { _ = ccurl_release_free_heap() }
        return released
    }
}
