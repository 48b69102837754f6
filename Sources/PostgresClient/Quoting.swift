/// Quotes an SQL identifier (table, database or channel name) so that any text is used verbatim:
/// `a "b"` becomes `"a ""b"""`. For the few statements that take no parameters (`LISTEN`, `CREATE DATABASE`).
public func quoteIdentifier(_ identifier: String) -> String {
    "\"" + identifier.replacing("\"", with: "\"\"") + "\""
}

/// Quotes a string literal for statements that take no parameters. Prefer query parameters everywhere else.
///
/// Like libpq's `PQescapeLiteral`: a text with backslashes becomes an `E'...'` literal with the backslashes
/// doubled, so the result is correct whatever `standard_conforming_strings` is set to.
public func quoteLiteral(_ literal: String) -> String {
    let quoted = literal.replacing("'", with: "''")
    if quoted.contains("\\") {
        return "E'" + quoted.replacing("\\", with: "\\\\") + "'"
    }
    return "'" + quoted + "'"
}
