import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the benchmark reads about its own process: memory, CPU time and the file descriptor limit.
enum ProcessResources {
    /// Peak resident set size (`VmHWM` in /proc/self/status), in bytes; nil where /proc is missing.
    static func peakResidentBytes(pid: Int32? = nil) -> Int? {
        statusField("VmHWM", pid: pid).map { $0 * 1024 }
    }

    /// Current resident set size (`VmRSS`), in bytes.
    static func residentBytes() -> Int? {
        statusField("VmRSS", pid: nil).map { $0 * 1024 }
    }

    /// User plus system CPU seconds used by this process so far (every thread).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// A `kB` field of /proc/PID/status (this process's by default), as a number of kB.
    private static func statusField(_ name: String, pid: Int32?) -> Int? {
        let path = "/proc/\(pid.map(String.init) ?? "self")/status"
        guard let status = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let number = line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first
            return number.flatMap { Int($0) }
        }
        return nil
    }
}

/// The whole machine's CPU time from /proc/stat, in seconds: what else ran during a phase (PostgreSQL, other
/// users of a shared machine) shows as busy time beyond this process's own.
struct MachineCPU {
    var busySeconds: Double
    var totalSeconds: Double

    static func now() -> MachineCPU? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 5 else { return nil }
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let total = ticks.prefix(8).reduce(0, +)
        let idle = ticks[3] + ticks[4]
        return MachineCPU(busySeconds: (total - idle) / hertz, totalSeconds: total / hertz)
    }
}

/// CPU seconds used so far by a process and its children (/proc/PID/stat): for a PostgreSQL server, the postmaster
/// and every backend, so PostgreSQL's share of a phase can be told apart. Children still alive count with their own
/// time; children that exited (a connection closed, an autovacuum worker done) with the root's cutime and cstime,
/// which hold the time of every child it has waited for.
enum ProcessTreeCPU {
    static func seconds(root: Int32) -> Double? {
        fromChildLists(root: root) ?? fromEveryProcess(root: root)
    }

    /// Through the kernel's lists of each thread's children (`/proc/PID/task/TID/children`): a few files instead of
    /// every process of the machine, cheap enough to sample often. Nil where the kernel keeps no such lists.
    private static func fromChildLists(root: Int32) -> Double? {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(root)/task") else {
            return nil
        }
        var children: [Substring] = []
        for thread in threads {
            guard let list = try? String(contentsOfFile: "/proc/\(root)/task/\(thread)/children", encoding: .utf8)
            else { return nil }
            children += list.split(whereSeparator: { $0 == " " || $0 == "\n" })
        }
        guard var total = ticks(of: String(root), withChildrenWaitedFor: true) else { return nil }
        for child in children {
            // A child that exited since the list was read counts in the root's cutime and cstime once waited for.
            total += ticks(of: String(child), withChildrenWaitedFor: false) ?? 0
        }
        return total / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// utime + stime of one process (and its cutime + cstime: its children already waited for).
    private static func ticks(of pid: String, withChildrenWaitedFor: Bool) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        guard withChildrenWaitedFor else { return user + system }
        return user + system + (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0)
    }

    private static func fromEveryProcess(root: Int32) -> Double? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        var found = false
        for entry in entries {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "(comm)": state ppid … utime (14th field overall) stime cutime cstime (17th).
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 14, let parent = Int32(fields[1]), pid == root || parent == root,
                let user = Double(fields[11]), let system = Double(fields[12])
            else { continue }
            var ticks = user + system
            if pid == root {
                found = true
                ticks += (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0)
            }
            total += ticks / hertz
        }
        return found ? total : nil
    }

    /// The parent of process `pid`.
    static func parent(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").dropFirst().first.flatMap { Int32($0) }
    }

    /// The postmaster's PID from `postmaster.pid` in a data directory.
    static func postmaster(dataDirectory: String) -> Int32? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").first.flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
    }
}
