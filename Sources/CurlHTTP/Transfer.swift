import CCurl
import CCurlMemory

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One request in flight: its easy handle, header list and the response collected so far.
///
/// Lives on the transport thread only. libcurl's write and header callbacks receive an unretained pointer to it;
/// `TransferLoop.active` keeps it alive until the handle has left the multi handle.
final class Transfer {
    let id: UInt64
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPError>) -> Void
    let easy: EasyHandle
    /// The multi handle it is attached to (`TransferLoop`'s shards).
    var shard = 0
    /// The host counted as having this transfer in flight (`TransferLoop.inFlightByHost`).
    var host: String?
    /// Counts the full receive buffers libcurl hands to the write callback (`TransferLoop`'s `QuietConnectionChecks`).
    var fullBuffers: FullBufferCount?
    /// libcurl's receive buffer per easy handle (`CURLOPT_BUFFERSIZE`): its minimum.
    static let receiveBufferBytes = 1_024
    /// A header list built for this transfer alone (when `TransferLoop`'s cache of lists is full), freed with it.
    private(set) var ownHeaderList: UnsafeMutablePointer<curl_slist>?
    private(set) var body: [UInt8] = []
    private(set) var headers: [(name: String, value: String)] = []
    /// Set when the write callback refused the body for exceeding `maxResponseBytes`.
    private(set) var bodyLimitExceeded = false
    /// When the request body is read through the read callback (`releaseUploadBuffer`): the next byte to give
    /// libcurl, the upload buffer it last read into, and whether that buffer's pages went back once the body was sent.
    private var uploadOffset = 0
    private var uploadBuffer: UnsafeMutableRawPointer?
    private var uploadBufferReleased = false

    init(_ pending: PendingRequest, easy: EasyHandle) {
        id = pending.id
        request = pending.request
        completion = pending.completion
        self.easy = easy
    }

    deinit {
        curl_slist_free_all(ownHeaderList)
    }

    /// Sets `easy` up for this request. The options every request shares are set once per handle (libcurl keeps
    /// options between transfers); the URL, with the HTTP version and trust that follow from it, and the header list
    /// only when they differ from the handle's last request (`route`: what the URL decides, nil when it is the
    /// handle's last URL). `headerList` is the request's header lines plus
    /// `Expect:` (from `TransferLoop`'s cache); nil builds one for this transfer alone. With `releaseUploadBuffer`,
    /// a POST that may share an HTTP/2 connection has its body read through the read callback, and its upload
    /// buffer's pages given back once the body is sent (`uploadProgress`). `waitForMultiplexing`: whether a request
    /// that may share an HTTP/2 connection waits for one (`Configuration.waitsForMultiplexing`).
    func configure(
        _ configuration: CurlMultiTransport.Configuration, route: Route?,
        headerList: UnsafeMutablePointer<curl_slist>?, poller: SocketPoller, releaseUploadBuffer: Bool,
        waitForMultiplexing: Bool
    ) throws(HTTPError) {
        // Only a reset takes CURLOPT_CAINFO back to libcurl's default (the system's CAs).
        if let route, easy.caFile != nil && easy.caFile != route.caFile { easy.reset() }
        if !easy.sharedOptionsSet {
            // Sockets are opened and closed through the poller, which counts them and forgets closed ones (see
            // `SocketPoller`). The poller outlives every connection: the multi handles, which own the connections,
            // hold it.
            let pollerPointer = Unmanaged.passUnretained(poller).toOpaque()
            try easy.set(CURLOPT_OPENSOCKETDATA, pointer: pollerPointer)
            try easy.setOpenSocket { poller, _, address in
                guard let poller, let address else { return -1 }
                return Unmanaged<SocketPoller>.fromOpaque(poller).takeUnretainedValue().opened(
                    family: address.pointee.family, type: address.pointee.socktype, protocol: address.pointee.protocol
                )
            }
            try easy.set(CURLOPT_CLOSESOCKETDATA, pointer: pollerPointer)
            try easy.setCloseSocket { poller, socket in
                guard let poller else { return close(socket) }
                return Unmanaged<SocketPoller>.fromOpaque(poller).takeUnretainedValue().closed(socket)
            }
            try easy.set(CURLOPT_NOSIGNAL, 1)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_FOLLOWLOCATION, 0)
            try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
            try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
            // libcurl's receive buffer (16 KiB by default) is allocated per easy handle, and one handle is held per
            // call in flight: its minimum, 1 KiB, keeps ten thousand calls to Apple 30 MiB smaller (measured); an
            // answer is read in more steps, which next to Apple's seconds costs nothing.
            try easy.set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes)
            // libcurl allocates an upload buffer (64 KiB by default) for each easy handle that sends a request through
            // it: every HTTP/2 POST, and every HTTP/1.1 request over TLS. It is freed when a transfer ends on a
            // connection nothing else uses; on a shared HTTP/2 connection the handle keeps it, idle or reused, until it
            // is cleaned up. So one is held per call in flight, and per idle handle after HTTP/2; 16 KiB is libcurl's
            // minimum and still more than a receipt. It comes from CurlGlobal's pool, where only the pages a request is
            // written to become resident.
            try easy.set(CURLOPT_UPLOAD_BUFFERSIZE, CurlGlobal.uploadBufferBytes)
            try easy.set(CURLOPT_WRITEFUNCTION, callback: { data, size, count, userdata in
                let length = size * count
                guard let userdata else { return 0 }
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            })
            try easy.set(CURLOPT_HEADERFUNCTION, callback: { data, size, count, userdata in
                let length = size * count
                guard let userdata else { return 0 }
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
                return length
            })
            // Used only while a body is read through them (`EasyHandle.setReadBody`).
            try easy.set(CURLOPT_READFUNCTION, callback: { buffer, size, count, userdata in
                guard let buffer, let userdata else { return Int(CURL_READFUNC_ABORT) }
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                return transfer.readBody(into: UnsafeMutableRawPointer(buffer), capacity: size * count)
            })
            try easy.setSeek { userdata, offset, origin in
                guard let userdata else { return CURL_SEEKFUNC_CANTSEEK }
                return Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue().rewindBody(to: offset, origin)
            }
            try easy.setProgress { userdata, _, _, uploadTotal, uploaded in
                guard let userdata else { return 0 }
                Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                    .uploadProgress(total: uploadTotal, sent: uploaded)
                return 0
            }
            easy.sharedOptionsSet = true
        }
        if let route {
            try easy.set(CURLOPT_URL, request.url)
            try easy.set(CURLOPT_HTTP_VERSION, route.curlHTTPVersion)
            easy.multiplexes = route.mayMultiplex
            if let caFile = route.caFile, easy.caFile != caFile {
                try easy.set(CURLOPT_CAINFO, caFile)
                easy.caFile = caFile
            }
            easy.url = request.url
        }
        // Wait for a connection that may multiplex this request rather than open another (HTTP/2 only), while the
        // calls in flight to its host fit on one (`Configuration.waitsForMultiplexing`).
        try easy.set(CURLOPT_PIPEWAIT, easy.multiplexes && waitForMultiplexing ? 1 : 0)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, request.connectTimeoutMilliseconds))
        try easy.set(CURLOPT_TIMEOUT_MS, max(1, request.totalTimeoutMilliseconds))
        // 0 would mean "no limit" to libcurl; the write callback enforces 0 itself.
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: max(0, request.maxResponseBytes))
        // PUT is POST's body under another method name: set on a handle when it changes, cleared again after.
        if (request.method == .put) != (easy.method == .put) {
            if request.method == .put {
                try easy.set(CURLOPT_CUSTOMREQUEST, "PUT")
            } else {
                try easy.set(CURLOPT_CUSTOMREQUEST, pointer: nil)
            }
        }
        switch request.method {
        case .post, .put:
            if easy.method != .post && easy.method != .put { try easy.set(CURLOPT_POST, 1) }
            // The body stays alive with `request` until this transfer is done.
            if releaseUploadBuffer && easy.multiplexes && request.body.count > 0 {
                poller.counters.bodyReadByCallback()
                try easy.setReadBody(
                    count: request.body.count, transfer: Unmanaged.passUnretained(self).toOpaque(),
                    prerequest: { userdata, _, _, _, _ in
                        guard let userdata else { return CURL_PREREQFUNC_ABORT }
                        Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue().startBody()
                        return CURL_PREREQFUNC_OK
                    }
                )
            } else {
                try easy.setPostBody(request.body)
            }
        case .get:
            if easy.method != .get { try easy.setGet() }
        }
        easy.method = request.method

        var list = headerList
        if list == nil {
            ownHeaderList = try Self.headerList(request.headers)
            list = ownHeaderList
        }
        if easy.headerList != list {
            try easy.set(CURLOPT_HTTPHEADER, list: list)
            easy.headerList = list
        }

        let this = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: this)
        try easy.set(CURLOPT_HEADERDATA, pointer: this)
        easy.clearError()
    }

    /// `headers` plus `Expect:` (no `100-continue` round trip) as a libcurl list; the caller frees it.
    static func headerList(_ headers: [String]) throws(HTTPError) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in headers + ["Expect:"] {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw HTTPError(kind: .other, message: "curl_slist_append failed for a request header")
            }
            list = appended
        }
        return list
    }

    /// The outcome once libcurl reported `CURLMSG_DONE` with `code`.
    func result(_ code: CURLcode) -> Result<HTTPResponse, HTTPError> {
        guard code == CURLE_OK else {
            let detail = bodyLimitExceeded
                ? "response body exceeds maxResponseBytes (\(request.maxResponseBytes))" : easy.errorDetail
            return .failure(HTTPError(curlCode: code, detail: detail, writeAborted: bodyLimitExceeded))
        }
        return .success(HTTPResponse(
            status: easy.info(CURLINFO_RESPONSE_CODE),
            body: body,
            headers: headers,
            totalSeconds: easy.info(CURLINFO_TOTAL_TIME),
            httpVersion: HTTPVersion(curlVersion: easy.info(CURLINFO_HTTP_VERSION))
        ))
    }

    /// libcurl's read callback: copies the body's next bytes, as many as fit, into libcurl's upload buffer
    /// (remembered for `uploadProgress`); 0 once all are given.
    private func readBody(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        uploadBuffer = buffer
        // The buffer is written again (a retry, or its handle's next request): a discard of its pages asked for its
        // last contents and not carried out yet (`uploadProgress`) would lose these.
        _ = ccurl_global_pool_cancel_discard(buffer)
        let body = request.body
        let length = min(capacity, body.count - uploadOffset)
        guard length > 0, let start = body.storage.baseAddress else { return 0 }
        buffer.copyMemory(from: start + uploadOffset, byteCount: length)
        uploadOffset += length
        return length
    }

    /// libcurl's pre-request callback, before each attempt at the request: the body starts from its first byte. A
    /// retry after a stream was refused or a reused connection died comes here even when nothing of the body had
    /// been sent (libcurl seeks only when something had), while the read callback may already have given some.
    private func startBody() {
        uploadOffset = 0
        uploadBuffer = nil
        uploadBufferReleased = false
    }

    /// libcurl's seek callback, for sending the body again (a retry on another connection): back to `offset`.
    /// The upload buffer is libcurl's to choose again.
    private func rewindBody(to offset: curl_off_t, _ origin: Int32) -> Int32 {
        guard origin == SEEK_SET, offset >= 0, offset <= request.body.count else { return CURL_SEEKFUNC_CANTSEEK }
        startBody()
        uploadOffset = Int(offset)
        return CURL_SEEKFUNC_OK
    }

    /// libcurl's progress callback. Once every byte of the body has been sent (HTTP/2 copies it into its frames, so
    /// the upload buffer holds nothing still to send), the buffer's pages go back to the system for the rest of the
    /// call: libcurl writes to it again only for another upload, which faults fresh pages in. libcurl frees the
    /// buffer only after the transfer's last progress report, so the pointer is still this transfer's here.
    /// The pages go back at the end of the transport loop's round (`ccurl_global_pool_flush_discards`), with the
    /// other buffers whose bodies were sent in it: a burst of requests costs a few system calls, not one each.
    private func uploadProgress(total: curl_off_t, sent: curl_off_t) {
        guard !uploadBufferReleased, total > 0, sent >= total, let uploadBuffer else { return }
        uploadBufferReleased = true
        _ = ccurl_global_pool_discard_later(uploadBuffer)
    }

    /// Appends a body chunk; `false` (refuse, so libcurl aborts with `CURLE_WRITE_ERROR`) past `maxResponseBytes`.
    private func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        // A full buffer is what libcurl 7.88 hands over when it holds more of the answer back (`QuietConnectionChecks`);
        // a shorter chunk is the end of what it had.
        if chunk.count >= Self.receiveBufferBytes { fullBuffers?.count &+= 1 }
        guard body.count + chunk.count <= request.maxResponseBytes else {
            bodyLimitExceeded = true
            return false
        }
        body.append(contentsOf: chunk)
        return true
    }

    /// Handles one header line as libcurl delivers it (status line, `Name: value\r\n`, or the blank end line).
    /// A status line starts a new response (after a `1xx`), so the headers collected so far are dropped.
    private func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            headers.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon], as: UTF8.self)
        let value = String(decoding: Self.trimmed(line[(colon + 1)...]), as: UTF8.self)
        headers.append((name: name, value: value))
    }

    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
              let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return bytes[bytes.startIndex..<bytes.startIndex] }
        return bytes[first...last]
    }
}

/// What a request's URL decides about its transfer under a transport's configuration.
struct Route {
    /// `CURLOPT_HTTP_VERSION`.
    let curlHTTPVersion: Int
    /// Whether the transfer may share an HTTP/2 connection (`CURLOPT_PIPEWAIT`).
    let mayMultiplex: Bool
    /// `CURLOPT_CAINFO` for `https://` to a loopback host when the configuration names a loopback CA file.
    let caFile: String?
    /// The URL's scheme, host and port (`URLHost.authority`): the calls in flight are counted by it.
    let authority: String

    init(url: String, configuration: CurlMultiTransport.Configuration) {
        authority = URLHost.authority(url)
        let https = URLHost.isHTTPS(url)
        let loopback = URLHost.isLoopback(url)
        switch configuration.httpVersion {
        case .http1_1:
            curlHTTPVersion = CURL_HTTP_VERSION_1_1
            mayMultiplex = false
        case .http2OverTLS, .http2WithLoopbackCleartext:
            if https {
                curlHTTPVersion = CURL_HTTP_VERSION_2TLS
                mayMultiplex = true
            } else if loopback && configuration.httpVersion == .http2WithLoopbackCleartext
                && CurlMultiTransport.supportsCleartextHTTP2
            {
                curlHTTPVersion = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
                mayMultiplex = true
            } else {
                curlHTTPVersion = CURL_HTTP_VERSION_1_1
                mayMultiplex = false
            }
        }
        caFile = https && loopback ? configuration.loopbackCAFile : nil
    }
}
