/// Text-format array literals for array parameters (`$1::text[]`, `$1::bigint[]`).
public enum PostgresArray {
    public static func text(_ values: [String]) -> String {
        let quoted = values.map { value in
            var escaped = "\""
            for character in value {
                if character == "\"" || character == "\\" { escaped.append("\\") }
                escaped.append(character)
            }
            return escaped + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }

    public static func int64(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }
}
