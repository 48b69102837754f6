#if os(Linux)
import Foundation
import Glibc
import LocalPostgres

/// A cluster's server processes (the postmaster and its children), stopped with SIGSTOP and let go with SIGCONT: a
/// database that keeps its connections open and never answers (a commit never acknowledged), as a hung host or a
/// network that drops packets without a reset looks to its clients.
struct FrozenPostgres {
    let processes: [pid_t]

    /// Stops every process of `cluster`'s server.
    static func freeze(_ cluster: LocalPostgresCluster) throws -> FrozenPostgres {
        let pidFile = try String(contentsOfFile: cluster.dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let postmaster = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
            throw TestSetupError("no postmaster pid in \(cluster.dataDirectory)/postmaster.pid")
        }
        let frozen = FrozenPostgres(processes: [postmaster] + children(of: postmaster))
        for process in frozen.processes { kill(process, SIGSTOP) }
        return frozen
    }

    /// Lets them all run again.
    func thaw() {
        for process in processes { kill(process, SIGCONT) }
    }

    /// The processes whose parent is `parent` (field 4 of /proc/PID/stat, after the command name in parentheses).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }
}
#endif
