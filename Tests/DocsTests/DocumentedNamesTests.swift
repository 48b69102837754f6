import Foundation
import Testing

/// The docs keep up with the code: every environment variable the sources read is in docs/configuration.md, and every
/// public SQL function, view and table is named in docs/sql.md. The names are parsed from the repository's files at
/// test time, so a setting or an SQL object added without its documentation fails here.
@Suite("Docs: every setting and SQL object the code has is documented")
struct DocumentedNamesTests {
    @Test("every environment variable read in Sources/ is in docs/configuration.md")
    func environmentVariables() throws {
        let names = try SourceNames.environmentVariables()
        // The parser found the settings it must find (a parser that finds nothing would pass any doc).
        #expect(names.isSuperset(of: ["DATABASE_URL", "MAX_IN_FLIGHT", "APPSTORE_ONLINE_CHECKS", "RECEIPT_WORKER_SQL_DIR"]))
        #expect(names.count >= 40, "only \(names.count) variables found: \(names.sorted())")
        let doc = try Repository.text("docs/configuration.md")
        let missing = names.filter { !Repository.mentions(doc, $0) }.sorted()
        #expect(missing.isEmpty, "read in Sources/ but missing from docs/configuration.md: \(missing)")
    }

    @Test("every SQL function, view and table is named in docs/sql.md")
    func sqlObjects() throws {
        let objects = try SourceNames.sqlObjects()
        #expect(objects.functions.isSuperset(of: ["enqueue_receipt", "mark_verdict_delivered", "receipt_claim"]))
        #expect(objects.views.isSuperset(of: ["receipt_queue_summary", "receipt_entitlements"]))
        #expect(objects.tables.isSuperset(of: ["receipt_jobs", "receipt_transactions", "receipt_settings"]))
        let doc = try Repository.text("docs/sql.md")
        for (kind, names) in [("function", objects.functions), ("view", objects.views), ("table", objects.tables)] {
            let missing = names.filter { !Repository.mentions(doc, $0) }.sorted()
            #expect(missing.isEmpty, "\(kind)s missing from docs/sql.md: \(missing)")
        }
    }

    /// Commands and flags: every command has its row in operations.md's table; the support commands' flags each have
    /// a row in their flags tables. (Other commands' flags are described in prose, and a few are not yet: `bench`'s
    /// `--write-batch`, `--yes-use-this-database`, `--notification-threads`; `enqueue`'s `--order-created-at`;
    /// `fake-appstore`'s `--rate-…` flags one by one.)
    @Test("every command is in docs/operations.md's commands table; explain's and set-account-token's flags in theirs")
    func commandsAndFlags() throws {
        let commands = try SourceNames.commands()
        #expect(commands.count >= 16, "only \(commands.count) commands found: \(commands.map(\.name))")
        #expect(commands.contains { $0.name == "explain" && $0.flags.contains("--transaction") })
        #expect(commands.contains { $0.name == "set-account-token" && $0.flags.contains("--app-account-token") })
        let operations = try Repository.text("docs/operations.md")
        let table = operations.split(separator: "\n").filter { $0.hasPrefix("| `receipt-worker ") }.joined(separator: "\n")
        for command in commands {
            #expect(table.contains("`receipt-worker \(command.name)"), "\(command.name) is not in operations.md's commands table")
        }
        for command in commands where ["explain", "set-account-token"].contains(command.name) {
            let missing = command.flags.filter { !operations.contains("| `\($0)") }
            #expect(missing.isEmpty, "\(command.name): flags without a row in its table in operations.md: \(missing)")
        }
    }

    @Test("the parsers see a name removed from a doc as missing")
    func removedNameIsMissing() throws {
        let doc = try Repository.text("docs/configuration.md")
        #expect(Repository.mentions(doc, "MAX_IN_FLIGHT"))
        let without = doc.replacingOccurrences(of: "MAX_IN_FLIGHT", with: "")
        #expect(!Repository.mentions(without, "MAX_IN_FLIGHT"))
        // A longer name that contains a shorter one does not document the shorter one.
        #expect(!Repository.mentions("`APPLE_SHARED_SECRET_FILE`", "APPLE_SHARED_SECRET"))
        #expect(!Repository.mentions("receipt_requeue_dead()", "receipt_requeue"))
        #expect(Repository.mentions("`receipt_requeue(job_id)`", "receipt_requeue"))
    }
}

/// Files of this repository, found from this file's path (Tests/DocsTests/DocumentedNamesTests.swift).
enum Repository {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // DocsTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every file under `directory` whose name ends with `suffix`, as (path, text).
    static func files(under directory: String, suffix: String) throws -> [(path: String, text: String)] {
        let base = root.appendingPathComponent(directory)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else {
            throw MissingDirectory(path: base.path)
        }
        var found: [(String, String)] = []
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(suffix) else { continue }
            found.append((directory + "/" + relative, try text(directory + "/" + relative)))
        }
        guard !found.isEmpty else { throw MissingDirectory(path: base.path) }
        return found.sorted { $0.0 < $1.0 }
    }

    /// Whether `name` appears in `text` as a whole word: not as part of a longer identifier
    /// (APPLE_SHARED_SECRET in APPLE_SHARED_SECRET_FILE, receipt_requeue in receipt_requeue_dead).
    static func mentions(_ text: String, _ name: String) -> Bool {
        let pattern = "(?<![A-Za-z0-9_])" + NSRegularExpression.escapedPattern(for: name) + "(?![A-Za-z0-9_])"
        return text.range(of: pattern, options: .regularExpression) != nil
    }

    struct MissingDirectory: Error, CustomStringConvertible {
        var path: String
        var description: String { "no files found under \(path)" }
    }
}

/// Names parsed from the sources.
enum SourceNames {
    /// The environment variables the Swift sources read: `environment["NAME"]`, the settings helpers
    /// (`string`, `number`, `integer`, `toggle` with the name as first argument), `…Setting = "NAME"` constants,
    /// and arrays of names looked up through `environment[…]` right after.
    static func environmentVariables() throws -> Set<String> {
        let name = "([A-Z][A-Z0-9_]*)"
        let patterns = [
            #"environment\[\s*""# + name + #""\s*\]"#,
            #"\b(?:string|number|integer|toggle)\(\s*""# + name + #"""#,
            #"\bstatic let \w*Setting\s*=\s*""# + name + #"""#,
        ]
        var names: Set<String> = []
        for file in try Repository.files(under: "Sources", suffix: ".swift") {
            for pattern in patterns {
                names.formUnion(captures(of: pattern, in: file.text))
            }
            // ["A", "B"] followed within a few lines by environment[…]: each name is read.
            let array = #"\[\s*("[A-Z][A-Z0-9_]*"(?:\s*,\s*"[A-Z][A-Z0-9_]*")*)\s*\][^\n]*\n?[^\n]*\n?[^\n]*environment\["#
            for list in captures(of: array, in: file.text) {
                names.formUnion(captures(of: "\"" + name + "\"", in: list))
            }
        }
        return names
    }

    /// The `receipt-worker` subcommands (`commandName: "…"` in Sources/ReceiptWorkerCommand) with the long flags their
    /// `@Option` and `@Flag` properties take (`var bundleId` is `--bundle-id`, `.customLong("x")` is `--x`).
    static func commands() throws -> [(name: String, flags: [String])] {
        var commands: [(String, [String])] = []
        let chunks = try Repository.files(under: "Sources/ReceiptWorkerCommand", suffix: ".swift")
            .flatMap { $0.text.components(separatedBy: "\nstruct ") }
        for text in chunks {
            let names = captures(of: #"commandName: "([a-z][a-z-]*)""#, in: text)
            guard let name = names.first, name != "receipt-worker" else { continue }
            let property = #"@(?:Option|Flag)\(((?:[^()]|\([^()]*\))*)\)\s*\n\s*var (\w+)"#
            var flags: [String] = []
            guard let regex = try? NSRegularExpression(pattern: property) else { continue }
            let whole = NSRange(text.startIndex..., in: text)
            for match in regex.matches(in: text, range: whole) {
                guard let arguments = Range(match.range(at: 1), in: text).map({ String(text[$0]) }),
                    let variable = Range(match.range(at: 2), in: text).map({ String(text[$0]) })
                else { continue }
                if let custom = captures(of: #"customLong\("([^"]+)"\)"#, in: arguments).first {
                    flags.append("--" + custom)
                } else {
                    flags.append("--" + variable.replacingOccurrences(
                        of: "([A-Z])", with: "-$1", options: .regularExpression
                    ).lowercased())
                }
            }
            commands.append((name, flags))
        }
        return commands
    }

    struct SQLObjects {
        var functions: Set<String> = []
        var views: Set<String> = []
        var tables: Set<String> = []
    }

    /// Functions (sql/functions and the trigger functions in sql/triggers), views (sql/views), and the tables the
    /// migrations create and do not drop again.
    static func sqlObjects() throws -> SQLObjects {
        var objects = SQLObjects()
        let function = #"(?i)CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(?:public\.)?([a-z_][a-z0-9_]*)"#
        for file in try Repository.files(under: "sql/functions", suffix: ".sql")
            + Repository.files(under: "sql/triggers", suffix: ".sql")
        {
            objects.functions.formUnion(captures(of: function, in: withoutComments(file.text)))
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
