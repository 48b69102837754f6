import Foundation

/// Each comparison of the code with the docs' tables, on the pages' text (so a test can change a page and see the
/// comparison fail).
enum DocsCheck {
    /// Every variable the sources read has a row in docs/configuration.md's variable tables; every production row's
    /// variable is read by the sources, and every tools row's by the sources, the tests or the scripts.
    static func variables(
        configuration page: String, code: Set<String>, readElsewhere: (String) throws -> Bool
    ) rethrows -> Mismatch {
        let rows = DocumentedNames.variableRows(page)
        let documented = Set(rows.flatMap(\.names))
        var stale = Set(rows.filter(\.isProduction).flatMap(\.names)).subtracting(code)
        for name in Set(rows.filter { !$0.isProduction }.flatMap(\.names)) where !code.contains(name) {
            if try !readElsewhere(name) { stale.insert(name) }
        }
        return Mismatch(undocumented: Array(code.subtracting(documented)), stale: Array(stale))
    }

    /// The commands and flags of the binary against the docs: a row per command in operations.md's commands table;
    /// each command's flags named in its rows, its flag tables, or the `flag` column of configuration.md (scoped to
    /// the command, or to none); every flag the docs give a command exists on it.
    static func commandsAndFlags(
        operations: String, otherPages: [String], configuration: String, help: CommandLineHelp
    ) -> Mismatch {
        let commands = DocumentedNames.commands(operations: operations, otherPages: otherPages)
        let variableRows = DocumentedNames.variableRows(configuration).filter(\.isProduction)
        var undocumented: [String] = []
        var stale: [String] = []
        for (command, arguments) in help.commands {
            guard let docs = commands[command], docs.inCommandsTable else {
                undocumented.append(command)
                continue
            }
            var documented = docs.flags
            for row in variableRows where row.scope.isEmpty || row.scope.contains(command) {
                documented.formUnion(row.flags)
            }
            for names in arguments
            where !names.contains(where: { name in documented.contains { DocumentedNames.names($0, name) } }) {
                undocumented.append("\(command) --\(names[0])")
            }
            for flag in docs.flags where !CommandLineHelp.everywhere.contains(flag)
                && !arguments.joined().contains(where: { DocumentedNames.names(flag, $0) })
            {
                stale.append("\(command) --\(flag)")
            }
        }
        for (command, docs) in commands where help.commands[command] == nil {
            if command.isEmpty {
                stale += docs.flags.subtracting(help.rootFlags).map { "receipt-worker --\($0)" }
            } else {
                stale.append(command)
            }
        }
        // configuration.md's flag column: each flag on every command it names, or on some command.
        let all = help.commands.values.joined().joined()
        for row in variableRows {
            for flag in row.flags {
                if row.scope.isEmpty {
                    if !all.contains(where: { DocumentedNames.names(flag, $0) }) { stale.append("--\(flag)") }
                    continue
                }
                for command in row.scope
                where !(help.commands[command] ?? []).joined().contains(where: { DocumentedNames.names(flag, $0) }) {
                    stale.append("\(command) --\(flag) (configuration.md)")
                }
            }
        }
        return Mismatch(undocumented: undocumented, stale: stale)
    }

    /// `RejectionReason`'s values against the rows of docs/verdicts.md's table under "Rejection reasons".
    static func rejectionReasons(verdicts page: String, code: Set<String>) -> Mismatch {
        let documented = DocumentedNames.firstColumn(page, header: ["reason", "when"], heading: "Rejection reasons")
        return Mismatch(code: code, documented: Set(documented.keys))
    }

    /// The event kinds the SQL writes against the rows of docs/notifications.md's kinds table.
    static func eventKinds(notifications page: String, code: Set<String>) -> Mismatch {
        let documented = DocumentedNames.firstColumn(page, header: ["kind", "when"])
        return Mismatch(code: code, documented: Set(documented.keys))
    }

    /// Functions, tables, views and NOTIFY channels against the rows of docs/sql.md's reference tables.
    static func sqlObjects(sql page: String, code: SourceNames.SQLObjects) -> [String: Mismatch] {
        let documented = { (kind: String) in Set(DocumentedNames.firstColumn(page, header: [kind]).keys) }
        return [
            "function": Mismatch(code: code.functions, documented: documented("function")),
            "table": Mismatch(code: code.tables, documented: documented("table")),
            "view": Mismatch(code: code.views, documented: documented("view")),
            "channel": Mismatch(code: code.channels, documented: documented("channel")),
        ]
    }
}
