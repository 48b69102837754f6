/// What the transport reads from a request's URL: its scheme and whether its host is a loopback address.
public enum URLHost {
    /// Whether a URL's host is a loopback address (127.0.0.0/8, ::1, localhost).
    public static func isLoopback(_ url: String) -> Bool {
        guard let schemeEnd = url.firstRange(of: "://") else { return false }
        var rest = url[schemeEnd.upperBound...]
        // The authority ends at the first "/", "?" or "#" (RFC 3986); only then look for userinfo.
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        let host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return false }
            host = rest[rest.index(after: rest.startIndex)..<close]
        } else {
            host = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        }
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" { return true }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// The scheme and authority of `url` in lower case (`https://buy.itunes.apple.com`), userinfo left out: what
    /// tells one server from another. The whole URL when it has no `://`.
    public static func authority(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return url.lowercased() }
        var rest = url[schemeEnd.upperBound...]
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return (url[..<schemeEnd.upperBound] + rest).lowercased()
    }

    /// Whether `url` starts with `https://` (in any case).
    public static func isHTTPS(_ url: String) -> Bool {
        url.prefix(8).lowercased() == "https://"
    }
}
