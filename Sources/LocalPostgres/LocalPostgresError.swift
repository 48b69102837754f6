/// Why a local PostgreSQL cluster could not be set up, started or stopped.
public struct LocalPostgresError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// `initdb`/`pg_ctl` (or `runuser`, when running as root) are not installed.
        case binariesNotFound
        /// The temporary directory or the `postgres` OS user could not be prepared.
        case setupFailed
        /// A command (`initdb`, `pg_ctl stop`, ...) exited with an error; the message holds its output.
        case commandFailed
        /// The server did not start; the message holds the end of its log.
        case startFailed
        /// The cluster was already stopped and its directory deleted.
        case clusterRemoved
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static let installHint =
        "PostgreSQL server binaries (initdb, pg_ctl) not found: install them with `apt-get install -y postgresql` "
        + "(Debian/Ubuntu) or set PG_BIN to their directory"

    static func binariesNotFound(_ detail: String? = nil) -> LocalPostgresError {
        LocalPostgresError(code: .binariesNotFound, message: installHint + (detail.map { " (\($0))" } ?? ""))
    }
}
