import CCurl

/// Owns the `CURLM` handle.
///
/// `@unchecked Sendable`: other threads only call `wakeUp()` (`curl_multi_wakeup` is documented thread-safe);
/// every other use of `raw` happens on the transport thread, and `curl_multi_cleanup` runs in `deinit`, after
/// both the transport and its thread have released the handle.
final class MultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init(configuration: CurlMultiTransport.Configuration) throws(HTTPError) {
        guard let raw = curl_multi_init() else {
            throw HTTPError(kind: .other, message: "curl_multi_init failed")
        }
        self.raw = raw
        let options: [(CURLMoption, Int)] = [
            (CURLMOPT_MAXCONNECTS, max(1, configuration.maxTotalConnections)),
            (CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, configuration.maxTotalConnections)),
            (CURLMOPT_MAX_HOST_CONNECTIONS, max(0, configuration.maxHostConnections)),
        ]
        for (option, value) in options {
            let code = ccurl_multi_setopt_long(raw, option, value)
            guard code == CURLM_OK else {
                curl_multi_cleanup(raw)
                throw HTTPError(
                    kind: .other,
                    message: "curl_multi_setopt(\(option.rawValue)) failed: \(String(cString: curl_multi_strerror(code)))"
                )
            }
        }
    }

    deinit {
        curl_multi_cleanup(raw)
    }

    /// Interrupts the transport thread's `curl_multi_poll`; safe from any thread.
    func wakeUp() {
        _ = curl_multi_wakeup(raw)
    }
}
