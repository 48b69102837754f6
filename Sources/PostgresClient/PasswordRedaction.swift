/// Removes the passwords of a connection string from a message about it.
///
/// libpq quotes the whole connection string in some parse errors (e.g. a malformed URL), password included; the
/// messages this client throws must be safe to log, so every password-looking value of the string (the password
/// of a URL's user info, any `password` setting) is masked wherever it appears, raw or percent-decoded.
enum PasswordRedaction {
    static let mask = "********"

    static func redact(_ message: String, connectionString: String) -> String {
        var redacted = message
        for secret in secrets(in: connectionString).sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            redacted = redacted.replacing(secret, with: mask)
        }
        return redacted
    }

    /// Every value that may be a password, in the forms it may take in a message. Errs on the side of masking.
    static func secrets(in connectionString: String) -> Set<String> {
        var values: [Substring] = []
        // postgresql://user:PASSWORD@host/...
        let userInfo = #/:\/\/[^:\/?@]*:(?<password>[^@\/?]*)@/#
        values += connectionString.matches(of: userInfo).map(\.output.password)
        // ?password=VALUE&... in a URL, or password=VALUE / password = 'VALUE' in key=value pairs.
        let setting = #/password\s*=\s*(?<value>'(?:[^'\\]|\\.)*'?|[^\s&]*)/#.ignoresCase()
        values += connectionString.matches(of: setting).map(\.output.value)

        var secrets = Set<String>()
        for value in values {
            let raw = String(value)
            let unquoted = raw.hasPrefix("'") ? String(raw.dropFirst().dropLast(raw.hasSuffix("'") ? 1 : 0)) : raw
            secrets.formUnion([raw, unquoted, unquoted.replacing("\\'", with: "'"), percentDecoded(unquoted)])
        }
        return secrets
    }

    /// `text` with `%XX` escapes decoded; invalid escapes are kept as they are.
    private static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
