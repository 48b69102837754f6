/// Connection strings for another database on the same server, in either libpq form.
enum DatabaseURL {
    /// `base` with its database replaced by `database` (URL form: the path; key=value form: `dbname=`).
    static func replacingDatabase(in base: String, with database: String) -> String {
        if base.hasPrefix("postgres://") || base.hasPrefix("postgresql://") {
            var url = Substring(base)
            var query: Substring = ""
            if let mark = url.firstIndex(of: "?") {
                query = url[mark...]
                url = url[..<mark]
            }
            if let schemeEnd = url.range(of: "://")?.upperBound, let slash = url[schemeEnd...].firstIndex(of: "/") {
                url = url[..<slash]
            }
            return url + "/" + database + query
        }
        // In key=value form a later keyword overrides an earlier one.
        return base + " dbname='" + database.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
