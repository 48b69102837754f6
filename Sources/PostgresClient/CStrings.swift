#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Calls `body` with NUL-terminated C copies of `strings` (`nil` stays `NULL`); the copies are freed when `body`
/// returns, so no pointer outlives the call. A string holding a NUL character is refused rather than truncated.
func withCStrings<Result>(
    _ strings: [String?],
    _ body: ([UnsafePointer<CChar>?]) throws -> Result
) throws -> Result {
    var copies: [UnsafeMutablePointer<CChar>?] = []
    copies.reserveCapacity(strings.count)
    defer { copies.forEach { free($0) } }
    for (index, string) in strings.enumerated() {
        guard let string else {
            copies.append(nil)
            continue
        }
        guard !string.utf8.contains(0) else {
            throw PostgresError(
                kind: .queryFailed,
                message: "parameter $\(index + 1) contains a NUL character, which PostgreSQL text cannot hold"
            )
        }
        guard let copy = strdup(string) else {
            throw PostgresError(kind: .protocolError, message: "out of memory copying parameter $\(index + 1)")
        }
        copies.append(copy)
    }
    return try body(copies.map { UnsafePointer($0) })
}

/// Refuses SQL text with a NUL character, which C would silently cut short.
func requireNoNUL(_ sql: String) throws {
    guard !sql.utf8.contains(0) else {
        throw PostgresError(kind: .queryFailed, message: "the SQL text contains a NUL character")
    }
}

/// A libpq message without the trailing newline (and indentation) libpq puts after it.
func trimmedMessage(_ message: UnsafePointer<CChar>?) -> String {
    guard let message else { return "" }
    var text = Substring(String(cString: message))
    while let last = text.last, last.isWhitespace { text.removeLast() }
    return String(text)
}
