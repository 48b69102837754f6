import Foundation

/// Runs the PostgreSQL binaries, as the `postgres` OS user when this process is root (the server refuses to run
/// as root), and returns their output.
struct CommandRunner: Sendable {
    /// `runuser`, when commands must switch user.
    private let runuser: String?
    /// The directory commands run in: one the `postgres` user can enter.
    private let workingDirectory: String

    init(workingDirectory: String) throws {
        self.workingDirectory = workingDirectory
        guard geteuid() == 0 else {
            runuser = nil
            return
        }
        let candidates = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser", "/bin/runuser"]
        guard let runuser = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw LocalPostgresError(
                code: .binariesNotFound,
                message: "running as root, but `runuser` (util-linux) is missing to run PostgreSQL as `postgres`"
            )
        }
        self.runuser = runuser
    }

    /// True when commands run as the `postgres` user, so the files they use must belong to it.
    var switchesUser: Bool { runuser != nil }

    /// Runs `executable` with `arguments`, waits for it, and returns its combined stdout and stderr.
    /// Throws `.commandFailed` with that output if it exits with an error.
    @discardableResult
    func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        if let runuser {
            process.executableURL = URL(fileURLWithPath: runuser)
            process.arguments = ["-u", "postgres", "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw LocalPostgresError(code: .commandFailed, message: "cannot run \(executable): \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let command = ([executable] + arguments).joined(separator: " ")
            throw LocalPostgresError(
                code: .commandFailed,
                message: "`\(command)` failed with status \(process.terminationStatus):\n\(text)"
            )
        }
        return text
    }

    /// Gives `path` to the `postgres` user when commands run as it.
    func handOver(_ path: String) throws {
        guard switchesUser else { return }
        guard let user = getpwnam("postgres") else {
            throw LocalPostgresError(
                code: .setupFailed,
                message: "running as root, PostgreSQL needs an unprivileged OS user named `postgres` "
                    + "(useradd -r postgres)"
            )
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw LocalPostgresError(code: .setupFailed, message: "chown postgres \(path) failed: errno \(errno)")
        }
    }
}
