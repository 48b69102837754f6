/// base64url (RFC 4648 §5) without padding, as JWS and JWT use it. Byte-level: a JWS is decoded for every job.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, 0xFF where it is not in the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// The bytes `text` encodes, or nil when it holds anything but the alphabet (padding included) or has a
    /// length no encoding produces.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var utf8 = text.utf8
        return utf8.withContiguousStorageIfAvailable(decode) ?? {
            utf8 = Substring(String(text)).utf8
            return Array(utf8).withUnsafeBufferPointer(decode)
        }()
    }

    /// The same for bytes.
    public static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        bytes.withUnsafeBufferPointer(decode)
    }

    private static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard input.count % 4 != 1 else { return nil }
        // The table is read through a pointer taken once: `values` in the loop would pass its lazy initialisation
        // check (swift_once) for every character.
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            var valid = true
            // Unpadded, `count` characters encode exactly count * 3 / 4 bytes (the remainder 2 or 3 gives 1 or 2).
            let output = [UInt8](unsafeUninitializedCapacity: input.count * 3 / 4) { buffer, initialized in
                var accumulator: UInt32 = 0
                var bits = 0
                var written = 0
                for byte in input {
                    let value = table[Int(byte)]
                    guard value != 0xFF else { valid = false; break }
                    accumulator = accumulator << 6 | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        buffer[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        written += 1
                    }
                }
                // The unused low bits of the last character must be zero (a canonical encoding).
                if valid && accumulator & ((1 << UInt32(bits)) - 1) != 0 { valid = false }
                initialized = written
            }
            return valid ? output : nil
        }
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { output.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            let shifts = rest == 2 ? [18, 12, 6] : [18, 12]
            for shift in shifts { output.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
