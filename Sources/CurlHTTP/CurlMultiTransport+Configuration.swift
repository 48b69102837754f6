extension CurlMultiTransport {
    /// Limits and identity for one transport (one multi handle, one connection cache).
    public struct Configuration: Sendable {
        /// Open connections at most (`CURLMOPT_MAX_TOTAL_CONNECTIONS`), and idle connections kept for reuse
        /// (`CURLMOPT_MAXCONNECTS`). Transfers beyond it wait inside libcurl for a free connection.
        public var maxTotalConnections: Int
        /// Open connections per host at most (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0 means no per-host limit.
        public var maxHostConnections: Int
        /// The `User-Agent` header of every request.
        public var userAgent: String

        public init(maxTotalConnections: Int = 256, maxHostConnections: Int = 0, userAgent: String = "receipt-worker") {
            self.maxTotalConnections = maxTotalConnections
            self.maxHostConnections = maxHostConnections
            self.userAgent = userAgent
        }
    }
}
