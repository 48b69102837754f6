import Foundation

/// Runs the PostgreSQL binaries, as the `postgres` OS user when this process is root (the server refuses to run
/// as root), and returns their output.
///
/// On Linux this uses `posix_spawn` (see `spawnAndWait`), not `Foundation.Process`: `Process` learns that a child
/// exited when a socket it hands to the child closes, and the server that `pg_ctl start` leaves running inherits
/// that socket, so `waitUntilExit()` would wait until the server stops.
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
    /// Throws `.commandFailed` with that output if it does not exit with status 0.
    @discardableResult
    func run(_ executable: String, _ arguments: [String]) throws -> String {
        let command = runuser.map { [$0, "-u", "postgres", "--", executable] } ?? [executable]
        let (status, output) = try spawnAndWait(command + arguments, workingDirectory: workingDirectory)
        guard status == 0 else {
            let commandLine = ([executable] + arguments).joined(separator: " ")
            throw LocalPostgresError(
                code: .commandFailed,
                message: "`\(commandLine)` failed with status \(status):\n\(output)"
            )
        }
        return output
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
