import Foundation
import ReceiptRules
import Testing

/// The docs keep up with the code, a table row at a time, in both directions: every environment variable the sources
/// read has a row in docs/configuration.md's variable tables and every row's variable is read; every command and
/// flag of the built binary is documented (operations.md's commands table, the commands' flag tables, the flag column
/// of configuration.md) and every flag documented exists; the rejection reasons of docs/verdicts.md are
/// `RejectionReason`'s; the event kinds of docs/notifications.md are those the SQL writes; every SQL function, table,
/// view and NOTIFY channel has its row in docs/sql.md's reference, and every row's object exists. The names are read
/// from the repository's files (and the binary's `--experimental-dump-help`) at test time, so a setting, flag, reason,
/// kind or SQL object added, renamed or removed on one side only fails here.
@Suite("Docs: what the code has is documented, and what is documented exists")
struct DocumentedNamesTests {
    static func page(_ name: String) throws -> String { try Repository.text("docs/\(name).md") }

    @Test("environment variables: read in Sources/ ⇔ a row of docs/configuration.md's variable tables")
    func environmentVariables() throws {
        let names = try SourceNames.environmentVariables()
        // The parser finds the settings it must find, those read through retentionDays(…) included (a parser that
        // finds nothing would pass any doc).
        #expect(names.isSuperset(of: [
            "DATABASE_URL", "MAX_IN_FLIGHT", "APPSTORE_ONLINE_CHECKS", "RECEIPT_WORKER_SQL_DIR",
            "RETENTION_CLEAR_RECEIPTS_DAYS", "RETENTION_DELETE_DAYS", "RETENTION_EVENTS_DAYS",
            "RETENTION_NOTIFICATIONS_DAYS", "RETENTION_FORGERY_DAYS", "RETENTION_REFUND_REQUESTS_DAYS",
        ]))
        #expect(names.count >= 50, "only \(names.count) variables found: \(names.sorted())")
        let mismatch = try DocsCheck.variables(
            configuration: Self.page("configuration"), code: names, readElsewhere: SourceNames.readOutsideSources
        )
        #expect(mismatch.isEmpty, "docs/configuration.md: \(mismatch)")
    }

    @Test("commands and flags: the binary's (--experimental-dump-help) ⇔ operations.md, flag tables, configuration.md")
    func commandsAndFlags() throws {
        let help = try CommandLineHelp.fromBinary()
        #expect(help.commands.keys.count >= 14 && help.commands["reconcile"] != nil, "\(help.commands.keys.sorted())")
        #expect(help.commands["work"]?.contains(["drain"]) == true)
        let mismatch = DocsCheck.commandsAndFlags(
            operations: try Self.page("operations"), otherPages: try Self.otherPages(),
            configuration: try Self.page("configuration"), help: help
        )
        #expect(mismatch.isEmpty, "\(mismatch)")
    }

    /// The pages besides operations.md that hold a command's flag table.
    static func otherPages() throws -> [String] {
        try ["performance", "configuration", "notifications", "reconciliation", "testing"].map(page)
    }

    @Test("rejection reasons: RejectionReason ⇔ the rows of docs/verdicts.md's Rejection reasons table")
    func rejectionReasons() throws {
        let code = Set(RejectionReason.allCases.map(\.rawValue))
        let mismatch = DocsCheck.rejectionReasons(verdicts: try Self.page("verdicts"), code: code)
        #expect(mismatch.isEmpty, "docs/verdicts.md: \(mismatch)")
    }

    @Test("event kinds: the kinds sql/functions writes ⇔ the rows of docs/notifications.md's kinds table")
    func eventKinds() throws {
        let code = try SourceNames.eventKinds()
        let expected: Set = ["revoked", "reinstated", "renewed", "auto_renew_enabled", "reconciliation_differences"]
        #expect(code.isSuperset(of: expected), "\(code.sorted())")
        let mismatch = DocsCheck.eventKinds(notifications: try Self.page("notifications"), code: code)
        #expect(mismatch.isEmpty, "docs/notifications.md: \(mismatch)")
    }

    @Test("SQL: every function, table, view and NOTIFY channel ⇔ a row of docs/sql.md's reference")
    func sqlObjects() throws {
        let objects = try SourceNames.sqlObjects()
        #expect(objects.functions.isSuperset(of: ["enqueue_receipt", "mark_verdict_delivered", "receipt_claim"]))
        #expect(objects.views.isSuperset(of: ["receipt_queue_summary", "receipt_entitlements"]))
        #expect(objects.tables.isSuperset(of: ["receipt_jobs", "receipt_transactions", "receipt_settings"]))
        #expect(objects.channels == ["receipt_jobs", "receipt_jobs_done", "receipt_notifications", "receipt_events",
                                     "receipt_revocations"])
        for (kind, mismatch) in DocsCheck.sqlObjects(sql: try Self.page("sql"), code: objects) {
            #expect(mismatch.isEmpty, "\(kind)s, docs/sql.md: \(mismatch)")
        }
    }
}

/// Each check fails when the docs and the code part: a row removed is undocumented, a row of something that does not
/// exist is stale.
@Suite("Docs: the checks see a row removed or made up")
struct DocsCheckTests {
    typealias Page = DocumentedNamesTests

    /// `page` without the table row (the whole line) that names `name` in code.
    static func withoutRow(_ page: String, naming name: String) throws -> String {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false)
        let kept = lines.filter { line in
            !(line.hasPrefix("|") && MarkdownTable.cells(String(line)).first?.contains("`\(name)") == true)
        }
        try #require(kept.count < lines.count, "no row names \(name)")
        return kept.joined(separator: "\n")
    }

    /// `page` with `row` added after the table row that names `after`.
    static func adding(_ row: String, after: String, to page: String) throws -> String {
        var lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let index = try #require(lines.firstIndex { $0.hasPrefix("|") && $0.contains("`\(after)") })
        lines.insert(row, at: index + 1)
        return lines.joined(separator: "\n")
    }

    @Test("variables: a RETENTION_* row removed is undocumented; a row of a variable nobody reads is stale; a mention elsewhere is no row")
    func variables() throws {
        let page = try Page.page("configuration")
        let code = try SourceNames.environmentVariables()
        let check = { (page: String) in
            try DocsCheck.variables(configuration: page, code: code, readElsewhere: SourceNames.readOutsideSources)
        }
        #expect(try check(page).isEmpty)
        for name in ["RETENTION_EVENTS_DAYS", "MAX_IN_FLIGHT"] {
            let without = try Self.withoutRow(page, naming: name)
            #expect(try check(without) == Mismatch(undocumented: [name]))
            // Named in prose all the same: a mention is not a row.
            #expect(try check(without + "\nSee `\(name)` above.\n") == Mismatch(undocumented: [name]))
        }
        let madeUp = try Self.adding(
            "| `RETENTION_NEVER_READ_DAYS` | none | off | Read by nothing. |", after: "RETENTION_EVENTS_DAYS", to: page
        )
        #expect(try check(madeUp) == Mismatch(stale: ["RETENTION_NEVER_READ_DAYS"]))
        // The parser reads retentionDays(…) and any other helper of the executable taking the name first.
        let source = """
            let x = try retentionDays(
                "RETENTION_X_DAYS", "x", flags.x)
            string("FOO_BAR", flag: nil)
            """
        #expect(SourceNames.environmentVariables(in: source, path: "Sources/ReceiptWorkerCommand/X.swift")
            == ["RETENTION_X_DAYS", "FOO_BAR"])
    }

    @Test("commands and flags: a command's row or a flag's row removed is undocumented; a flag or command made up is stale")
    func commandsAndFlags() throws {
        let help = try CommandLineHelp.fromBinary()
        let operations = try Page.page("operations")
        let others = try Page.otherPages()
        let configuration = try Page.page("configuration")
        let check = { (operations: String, others: [String], configuration: String) in
            DocsCheck.commandsAndFlags(
                operations: operations, otherPages: others, configuration: configuration, help: help
            )
        }
        #expect(check(operations, others, configuration).isEmpty)
        // The reconcile row (its flags are named there only).
        let noReconcile = try Self.withoutRow(operations, naming: "receipt-worker reconcile")
        #expect(check(noReconcile, others, configuration).undocumented == ["reconcile"])
        #expect(noReconcile.contains("reconcile"), "still named in prose")
        // A flag table's row: bench's --claim-batch is documented there alone.
        let performance = try Self.withoutRow(try Page.page("performance"), naming: "--claim-batch")
        #expect(check(operations, [performance] + others.dropFirst(), configuration)
            == Mismatch(undocumented: ["bench --claim-batch"]))
        // A flag of configuration.md's column, scoped.
        let noLease = try Self.withoutRow(configuration, naming: "LEASE_SECONDS")
        #expect(check(operations, others, noLease).undocumented == ["work --lease-seconds"])
        // Made up: a flag in a command's row, a command, a flag in a flag table, a scope that lacks the flag.
        let madeUpFlag = operations.replacingOccurrences(
            of: "`--loop` repeats", with: "`--loop` (or `--forever`) repeats"
        )
        #expect(check(madeUpFlag, others, configuration) == Mismatch(stale: ["sweep --forever"]))
        let madeUpCommand = try Self.adding(
            "| `receipt-worker reindex` | Made up. |", after: "receipt-worker status", to: operations
        )
        #expect(check(madeUpCommand, others, configuration) == Mismatch(stale: ["reindex"]))
        let madeUpScope = configuration.replacingOccurrences(
            of: "`--max-attempts` (`work`, `sweep`)", with: "`--max-attempts` (`work`, `sweep`, `status`)"
        )
        #expect(check(operations, others, madeUpScope) == Mismatch(stale: ["status --max-attempts (configuration.md)"]))
    }

    @Test("rejection reasons: a reason's row removed is undocumented; a made-up reason's row is stale")
    func rejectionReasons() throws {
        let page = try Page.page("verdicts")
        let code = Set(RejectionReason.allCases.map(\.rawValue))
        #expect(DocsCheck.rejectionReasons(verdicts: page, code: code).isEmpty)
        let without = try Self.withoutRow(page, naming: "family_shared")
        #expect(DocsCheck.rejectionReasons(verdicts: without, code: code) == Mismatch(undocumented: ["family_shared"]))
        let madeUp = try Self.adding("| `too_expensive` | Made up. |", after: "family_shared", to: page)
        #expect(DocsCheck.rejectionReasons(verdicts: madeUp, code: code) == Mismatch(stale: ["too_expensive"]))
    }

    @Test("event kinds: a kind's row removed is undocumented; a made-up kind's row is stale; kinds of a CASE and a variable are read")
    func eventKinds() throws {
        let page = try Page.page("notifications")
        let code = try SourceNames.eventKinds()
        #expect(DocsCheck.eventKinds(notifications: page, code: code).isEmpty)
        let without = try Self.withoutRow(page, naming: "refunded_prorated")
        #expect(DocsCheck.eventKinds(notifications: without, code: code)
            == Mismatch(undocumented: ["refunded_prorated"]))
        let madeUp = try Self.adding("| `refund_denied` | Made up. |", after: "refunded_prorated", to: page)
        #expect(DocsCheck.eventKinds(notifications: madeUp, code: code) == Mismatch(stale: ["refund_denied"]))
        let sql = """
            DECLARE v_what text := CASE WHEN p_x THEN 'first_kind' ELSE 'second_kind' END;
            PERFORM receipt_event(jsonb_build_object('kind', v_what));
            PERFORM receipt_event(jsonb_build_object('kind', CASE WHEN a = 'b' THEN 'third_kind' END, 'x', 1));
            PERFORM receipt_event(jsonb_build_object('kind', lower(p_type)));
            """
        #expect(SourceNames.eventKinds(in: sql) == ["first_kind", "second_kind", "third_kind"])
    }

    @Test("SQL objects: a function's row removed is undocumented, a row of a function that does not exist is stale")
    func sqlObjects() throws {
        let page = try Page.page("sql")
        let code = try SourceNames.sqlObjects()
        let without = try Self.withoutRow(page, naming: "receipt_reconcile")
        #expect(DocsCheck.sqlObjects(sql: without, code: code)["function"]
            == Mismatch(undocumented: ["receipt_reconcile"]))
        let madeUp = try Self.adding("| `receipt_frobnicate()` | Made up. |", after: "receipt_reconcile", to: page)
        #expect(DocsCheck.sqlObjects(sql: madeUp, code: code)["function"] == Mismatch(stale: ["receipt_frobnicate"]))
    }

    @Test("a table row is the unit: cells split on | but not on \\| or inside code; tables found under their heading")
    func markdownTables() {
        let page = """
            ## Section

            Some text naming `receipt-worker demo`.

            | flag | meaning |
            | --- | --- |
            | `--via sql\\|http` | a \\| b |
            | `a | b` | c |
            """
        let tables = MarkdownTable.tables(in: page)
        #expect(tables.count == 1)
        #expect(tables.first?.heading == "Section")
        #expect(tables.first?.preamble.contains("`receipt-worker demo`") == true)
        #expect(tables.first?.rows.map(\.cells) == [["`--via sql\\|http`", "a \\| b"], ["`a | b`", "c"]])
        #expect(DocumentedNames.flags(in: "`--rate-…` and --loop, not a-b--c") == ["rate-…", "loop"])
    }
}
