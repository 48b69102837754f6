import CCurl

/// One libcurl easy handle plus its `CURLOPT_ERRORBUFFER`; kept in a free list between transfers so the
/// handle's DNS cache and TLS session survive. Used by the transport thread only.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private static let errorBufferSize = Int(CURL_ERROR_SIZE)

    /// What the handle was last set up with, so that a handle coming back from a finished transfer is set up again
    /// only where the next request differs (libcurl keeps options between transfers): the options every request
    /// shares, its method, URL, and header list (owned by `TransferLoop`'s cache). Cleared by `reset()`.
    var sharedOptionsSet = false
    var method: HTTPMethod?
    var url: String?
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The CA file set with `CURLOPT_CAINFO` for a loopback host, which only `reset()` takes back to libcurl's default.
    var caFile: String?
    /// Whether the URL set may share an HTTP/2 connection (with the calls in flight, `CURLOPT_PIPEWAIT`).
    var multiplexes = false
    /// Whether the last POST body was read through the read callback, with progress reports on (`setReadBody`).
    var readsBody = false

    init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Self.errorBufferSize)
        errorBuffer.initialize(repeating: 0, count: Self.errorBufferSize)
        _ = ccurl_easy_setopt_ptr(raw, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deinitialize(count: Self.errorBufferSize)
        errorBuffer.deallocate()
    }

    /// The libcurl detail message of the last failure, or "" if libcurl wrote none.
    var errorDetail: String {
        var text = String(cString: errorBuffer)
        while let last = text.last, last.isNewline || last == " " { text.removeLast() }
        return text
    }

    /// Clears every option (`curl_easy_reset`), dropping pointers to the finished transfer; keeps the error buffer.
    func reset() {
        curl_easy_reset(raw)
        sharedOptionsSet = false
        method = nil
        url = nil
        headerList = nil
        caFile = nil
        multiplexes = false
        readsBody = false
        clearError()
        _ = ccurl_easy_setopt_ptr(raw, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    /// Forgets the last failure's detail message.
    func clearError() {
        errorBuffer[0] = 0
    }

    func set(_ option: CURLoption, _ value: Int) throws(HTTPError) {
        try check(ccurl_easy_setopt_long(raw, option, value), option)
    }

    func set(_ option: CURLoption, _ value: String) throws(HTTPError) {
        try check(ccurl_easy_setopt_cstr(raw, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int) throws(HTTPError) {
        try check(ccurl_easy_setopt_off(raw, option, curl_off_t(value)), option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(HTTPError) {
        try check(ccurl_easy_setopt_ptr(raw, option, value), option)
    }

    func set(_ option: CURLoption, list value: UnsafeMutablePointer<curl_slist>?) throws(HTTPError) {
        try check(ccurl_easy_setopt_slist(raw, option, value), option)
    }

    func set(_ option: CURLoption, callback value: ccurl_data_callback) throws(HTTPError) {
        try check(ccurl_easy_setopt_callback(raw, option, value), option)
    }

    func setCloseSocket(_ callback: curl_closesocket_callback) throws(HTTPError) {
        try check(ccurl_easy_setopt_closesocket(raw, callback), CURLOPT_CLOSESOCKETFUNCTION)
    }

    func setSeek(_ callback: curl_seek_callback) throws(HTTPError) {
        try check(ccurl_easy_setopt_seek(raw, callback), CURLOPT_SEEKFUNCTION)
    }

    func setPrerequest(_ callback: curl_prereq_callback?) throws(HTTPError) {
        try check(ccurl_easy_setopt_prereq(raw, callback), CURLOPT_PREREQFUNCTION)
    }

    func setProgress(_ callback: curl_xferinfo_callback) throws(HTTPError) {
        try check(ccurl_easy_setopt_xferinfo(raw, callback), CURLOPT_XFERINFOFUNCTION)
    }

    func setOpenSocket(_ callback: curl_opensocket_callback) throws(HTTPError) {
        try check(ccurl_easy_setopt_opensocket(raw, callback), CURLOPT_OPENSOCKETFUNCTION)
    }

    /// `CURLOPT_POSTFIELDS` points libcurl at `body`'s bytes without a copy: the caller keeps `body` alive until the
    /// transfer has left the multi handle, and sets another body (or resets the handle) before the next one.
    func setPostBody(_ body: HTTPBody) throws(HTTPError) {
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: body.count)
        try set(CURLOPT_POSTFIELDS, pointer: body.storage.baseAddress)
        try stopReadingBody()
    }

    /// Has libcurl read the next POST body of `count` bytes through `CURLOPT_READFUNCTION` (from `transfer`, also
    /// given to the seek, pre-request and progress callbacks), reporting progress. `prerequest` runs before every
    /// attempt at the request (a retry too); it is set only in this mode, so no other transfer reaches `transfer`.
    func setReadBody(
        count: Int, transfer: UnsafeMutableRawPointer, prerequest: curl_prereq_callback
    ) throws(HTTPError) {
        try set(CURLOPT_POSTFIELDS, pointer: nil)
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: count)
        try set(CURLOPT_READDATA, pointer: transfer)
        try set(CURLOPT_SEEKDATA, pointer: transfer)
        try set(CURLOPT_PREREQDATA, pointer: transfer)
        try set(CURLOPT_XFERINFODATA, pointer: transfer)
        if !readsBody {
            try setPrerequest(prerequest)
            try set(CURLOPT_NOPROGRESS, 0)
            readsBody = true
        }
    }

    private func stopReadingBody() throws(HTTPError) {
        guard readsBody else { return }
        try set(CURLOPT_NOPROGRESS, 1)
        try setPrerequest(nil)
        readsBody = false
    }

    /// Makes the next transfer a GET without a body. The previous POST's body pointer is dropped first (setting
    /// `CURLOPT_POSTFIELDS` makes libcurl switch to POST, so `CURLOPT_HTTPGET` comes last).
    func setGet() throws(HTTPError) {
        try set(CURLOPT_POSTFIELDS, pointer: nil)
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: -1)
        try set(CURLOPT_HTTPGET, 1)
        try stopReadingBody()
    }

    func info(_ info: CURLINFO) -> Int {
        var value = 0
        return ccurl_easy_getinfo_long(raw, info, &value) == CURLE_OK ? value : 0
    }

    func info(_ info: CURLINFO) -> Double {
        var value = 0.0
        return ccurl_easy_getinfo_double(raw, info, &value) == CURLE_OK ? value : 0
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPError) {
        guard code == CURLE_OK else {
            var error = HTTPError(curlCode: code, detail: "", writeAborted: false)
            error.message += " (setting curl option \(option.rawValue))"
            throw error
        }
    }
}
