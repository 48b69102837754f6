import Foundation

/// The commands and flags of the built `receipt-worker`, as ArgumentParser describes them
/// (`receipt-worker --experimental-dump-help`: every command's arguments, with all their names).
struct CommandLineHelp {
    /// Per command (a subcommand as "notifications test"), each argument's long names (`["fail-on-rejected", "no-fail-on-rejected"]` is one argument);
    /// `--help` and `--version`, which every command has, left out.
    var commands: [String: [[String]]]
    /// The top level's own flags (`--version`).
    var rootFlags: Set<String>

    static let everywhere: Set<String> = ["help", "version"]

    static func fromBinary() throws -> CommandLineHelp {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Repository.executable())
        process.arguments = ["--experimental-dump-help"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try parse(data)
    }

    static func parse(_ data: Data) throws -> CommandLineHelp {
        struct Dump: Decodable {
            var command: Command
        }
        struct Command: Decodable {
            var commandName: String
            var arguments: [Argument]?
            var subcommands: [Command]?
        }
        struct Argument: Decodable {
            var names: [Name]?
        }
        struct Name: Decodable {
            var kind: String
            var name: String
        }
        let dump = try JSONDecoder().decode(Dump.self, from: data)
        func longNames(_ command: Command) -> [[String]] {
            (command.arguments ?? []).compactMap { argument in
                let names = (argument.names ?? []).filter { $0.kind == "long" }.map(\.name)
                return names.isEmpty || names.allSatisfy(everywhere.contains) ? nil : names
            }
        }
        var commands: [String: [[String]]] = [:]
        for command in dump.command.subcommands ?? [] where command.commandName != "help" {
            commands[command.commandName] = longNames(command)
            // A command's own subcommands (`notifications test`), under both names.
            for subcommand in command.subcommands ?? [] where subcommand.commandName != "help" {
                commands[command.commandName + " " + subcommand.commandName] = longNames(subcommand)
            }
        }
        let root = (dump.command.arguments ?? []).flatMap { ($0.names ?? []).filter { $0.kind == "long" }.map(\.name) }
        return CommandLineHelp(commands: commands, rootFlags: Set(root))
    }
}
