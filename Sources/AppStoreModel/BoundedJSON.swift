import Foundation

/// Foundation's `JSONDecoder`, for bytes from outside, behind a bound on their nesting.
///
/// Why: `JSONDecoder` (swift-foundation, Swift 6.3) traps instead of throwing when its 513th level of nesting opens on
/// the last byte of the input (`{"a":` then 512 `[`: "Too many nested arrays or dictionaries" reported at the end
/// of the buffer, whose line and column it then reads past). A payload anyone can send (a notification, before its
/// signature is checked) must not end the worker, so every decoder here counts the depth first, in one pass over the
/// bytes, and refuses what JSONDecoder would refuse for its depth with a `DecodingError`, as malformed JSON, before
/// JSONDecoder sees it.
public enum BoundedJSON {
    /// The deepest nesting accepted: JSONDecoder's own limit, so that the bound refuses nothing JSONDecoder would
    /// have read (it answers "Too many nested arrays or dictionaries" past it, when it does not trap).
    public static let maxDepth = 512

    /// `JSONDecoder().decode(type, from: bytes)`, once the nesting of `bytes` is known to be within `maxDepth`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try checkDepth(bytes)
        return try JSONDecoder().decode(type, from: Data(bytes))
    }

    /// Throws `DecodingError.dataCorrupted` when arrays and objects (outside strings) nest deeper than `maxDepth`.
    public static func checkDepth(_ bytes: [UInt8]) throws {
        // Fewer bytes than levels: nothing to count. (Most answers are longer; one pass over the buffer then.)
        guard bytes.count > maxDepth else { return }
        let tooDeep = bytes.withUnsafeBufferPointer { buffer -> Bool in
            var depth = 0
            var inString = false
            var index = 0
            let count = buffer.count
            while index < count {
                let byte = buffer[index]
                index += 1
                if inString {
                    if byte == UInt8(ascii: "\\") {
                        index += 1  // the escaped byte, whatever it is
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else if byte == UInt8(ascii: "\"") {
                    inString = true
                } else if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                    depth += 1
                    if depth > maxDepth { return true }
                } else if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                    depth = max(0, depth - 1)  // a closing bracket too many: the decoder refuses the input there
                }
            }
            return false
        }
        if tooDeep {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "The JSON nests deeper than \(maxDepth) levels.")
            )
        }
    }
}
