import Foundation
import Testing

/// Names parsed from the sources: what the code has, to compare with what the docs' tables document.
enum SourceNames {
    static let variableName = "([A-Z][A-Z0-9_]*)"

    /// The environment variables the Swift sources read: `environment["NAME"]`; a call whose first argument is the
    /// name, in the executable (`ReceiptWorkerCommand`, where configuration is read: `string`, `number`, `integer`,
    /// `toggle`, `retentionDays`, any helper added later) or in a file that reads the environment; `…Setting = "NAME"`
    /// constants; and arrays of names looked up through `environment[…]` right after.
    static func environmentVariables() throws -> Set<String> {
        var names: Set<String> = []
        for file in try Repository.files(under: "Sources", suffix: ".swift") {
            names.formUnion(environmentVariables(in: file.text, path: file.path))
        }
        return names
    }

    /// `environmentVariables()` of one file.
    static func environmentVariables(in text: String, path: String) -> Set<String> {
        let name = variableName
        var patterns = [
            #"environment\[\s*""# + name + #""\s*\]"#,
            #"\bstatic let \w*Setting\s*=\s*""# + name + #"""#,
        ]
        if path.hasPrefix("Sources/ReceiptWorkerCommand/") || text.contains("environment[") {
            // Two characters at least and an underscore or all capitals: a variable's name, not a word.
            patterns.append(#"\b[a-z]\w*\(\s*"([A-Z][A-Z0-9]*_[A-Z0-9_]+)""#)
        }
        var names: Set<String> = []
        for pattern in patterns {
            names.formUnion(captures(of: pattern, in: text))
        }
        // ["A", "B"] followed within a few lines by environment[…]: each name is read.
        let array = #"\[\s*("[A-Z][A-Z0-9_]*"(?:\s*,\s*"[A-Z][A-Z0-9_]*")*)\s*,?\s*\][^\n]*\n?[^\n]*\n?[^\n]*environment\["#
        for list in captures(of: array, in: text) {
            names.formUnion(captures(of: "\"" + name + "\"", in: list))
        }
        return names
    }

    /// Whether `name` is read outside `Sources/`: a `"NAME"` literal in the tests, or `$NAME` / `${NAME` in the
    /// scripts (the variables of the "Tools and tests" table).
    static func readOutsideSources(_ name: String) throws -> Bool {
        for file in try Repository.files(under: "Tests", suffix: ".swift") where file.text.contains("\"\(name)\"") {
            return true
        }
        for file in try Repository.files(under: "scripts", suffix: ".sh")
        where file.text.contains("$\(name)") || file.text.contains("${\(name)") {
            return true
        }
        return false
    }

    struct SQLObjects {
        var functions: Set<String> = []
        var views: Set<String> = []
        var tables: Set<String> = []
        /// The channels `pg_notify()` sends on.
        var channels: Set<String> = []
    }

    /// Functions (sql/functions and the trigger functions in sql/triggers), views (sql/views), the tables the
    /// migrations create and do not drop again, and the NOTIFY channels of the definitions.
    static func sqlObjects() throws -> SQLObjects {
        var objects = SQLObjects()
        let function = #"(?i)CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(?:public\.)?([a-z_][a-z0-9_]*)"#
        let notify = #"pg_notify\(\s*'([a-z_][a-z0-9_]*)'"#
        for file in try Repository.files(under: "sql/functions", suffix: ".sql")
            + Repository.files(under: "sql/triggers", suffix: ".sql")
        {
            let text = withoutComments(file.text)
            objects.functions.formUnion(captures(of: function, in: text))
            objects.channels.formUnion(captures(of: notify, in: text))
        }
        let view = #"(?i)CREATE\s+OR\s+REPLACE\s+VIEW\s+(?:public\.)?([a-z_][a-z0-9_]*)"#
        for file in try Repository.files(under: "sql/views", suffix: ".sql") {
            objects.views.formUnion(captures(of: view, in: withoutComments(file.text)))
        }
        let create = #"(?i)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:public\.)?([a-z_][a-z0-9_]*)"#
        let drop = #"(?i)DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:public\.)?([a-z_][a-z0-9_]*)"#
        var dropped: Set<String> = []
        for file in try Repository.files(under: "sql/migrations", suffix: ".sql") {
            let text = withoutComments(file.text)
            objects.tables.formUnion(captures(of: create, in: text))
            dropped.formUnion(captures(of: drop, in: text))
        }
        objects.tables.subtract(dropped)
        return objects
    }

    /// The kinds of event the SQL definitions (functions and triggers) write (`'kind', …` in an event's JSON): a
    /// literal, the literals a `CASE` gives, or those of a variable set from literals in the same function
    /// (`v_action`). Kinds made from a
    /// notification's type (`lower(p_type)`) are the docs' "the notification's type, lower case", not listed.
    static func eventKinds() throws -> Set<String> {
        var kinds: Set<String> = []
        for file in try Repository.files(under: "sql/functions", suffix: ".sql")
            + Repository.files(under: "sql/triggers", suffix: ".sql")
        {
            kinds.formUnion(eventKinds(in: withoutComments(file.text)))
        }
        return kinds
    }

    /// `eventKinds()` of one file's SQL.
    static func eventKinds(in sql: String) -> Set<String> {
        var kinds: Set<String> = []
        let literal = #"'([a-z][a-z0-9_]*)'"#
        let given = #"(?is)'kind'\s*,\s*('[a-z][a-z0-9_]*'|CASE\b.*?\bEND|[a-z_][a-z0-9_.]*(?:\([^)]*\))?)"#
        for value in captures(of: given, in: sql) {
            if value.hasPrefix("'") {
                kinds.formUnion(captures(of: literal, in: value))
            } else if value.uppercased().hasPrefix("CASE") {
                kinds.formUnion(captures(of: #"(?i)\b(?:THEN|ELSE)\s+"# + literal, in: value))
            } else if value.hasPrefix("v_") {
                // A variable: the literals it is given in this function.
                let assigned = NSRegularExpression.escapedPattern(for: value)
                    + #"(?:\s+\w+)?\s*:=\s*(CASE\b.*?\bEND|'[a-z][a-z0-9_]*')"#
                for expression in captures(of: "(?is)" + assigned, in: sql) {
                    kinds.formUnion(captures(of: #"(?i)(?:THEN|ELSE|^)\s*"# + literal, in: expression))
                }
            }
        }
        return kinds
    }

    /// SQL without `-- …` comments, so that a table named in a comment is not taken for one created.
    static func withoutComments(_ sql: String) -> String {
        sql.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }

    /// The first capture group of every match.
    static func captures(of pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else {
            Issue.record("bad pattern \(pattern)")
            return []
        }
        let whole = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: whole).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
