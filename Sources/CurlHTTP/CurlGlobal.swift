import CCurl

/// Process-wide libcurl initialisation.
public enum CurlGlobal {
    /// `curl_global_init` is not thread-safe; a `static let` is initialised exactly once, under `swift_once`.
    private static let initResult: Int32 = Int32(bitPattern: curl_global_init(Int(CURL_GLOBAL_DEFAULT)).rawValue)

    /// Calls `curl_global_init(CURL_GLOBAL_DEFAULT)` exactly once per process; later calls do nothing.
    ///
    /// Call it from `main` before starting threads. `CurlMultiTransport.init` calls it too, so a forgotten
    /// call cannot leave libcurl to initialise itself lazily (and racily) inside `curl_multi_init`.
    public static func initialize() {
        _ = initResult
    }

    /// The `CURLcode` returned by the one `curl_global_init` call (0 on success).
    public static var initializationCode: Int32 {
        initResult
    }
}
