/// Connection strings, in either of libpq's forms: a URL (`postgresql://user@host:5432/db?sslmode=require`) or
/// `key=value` pairs (`host=db user=app dbname=payments`).
public enum ConnectionString {
    /// `base`, the same server and settings, pointing at `database` instead. In a URL the path is replaced (the name
    /// percent-encoded, the query kept); in `key=value` form a quoted `dbname` is appended, which overrides an
    /// earlier one (libpq applies keywords in order).
    public static func replacingDatabase(in base: String, with database: String) -> String {
        guard base.hasPrefix("postgres://") || base.hasPrefix("postgresql://") else {
            let quoted = database.replacing("\\", with: "\\\\").replacing("'", with: "\\'")
            return base + " dbname='" + quoted + "'"
        }
        var server = Substring(base)
        var query: Substring = ""
        if let mark = server.firstIndex(of: "?") {
            query = server[mark...]
            server = server[..<mark]
        }
        if let schemeEnd = server.firstRange(of: "://")?.upperBound,
            let slash = server[schemeEnd...].firstIndex(of: "/")
        {
            server = server[..<slash]
        }
        return server + "/" + percentEncoded(database) + query
    }

    /// `text` with every byte but the URL-unreserved ones (letters, digits, `-`, `_`, `.`, `~`) as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return encoded
    }
}
