import Foundation

/// Where `initdb` and `pg_ctl` are.
struct PostgresBinaries: Sendable, Equatable {
    var initdb: String
    var pgCtl: String

    /// Looks in `$PG_BIN` when it is set (and only there: an explicit setting is not silently ignored), else in
    /// `$PATH`, else in the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    static func locate(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        versionedRoot: String = "/usr/lib/postgresql"
    ) throws -> PostgresBinaries {
        if let directory = environment["PG_BIN"], !directory.isEmpty {
            guard let binaries = PostgresBinaries(directory: directory) else {
                throw LocalPostgresError.binariesNotFound("PG_BIN=\(directory) does not contain them")
            }
            return binaries
        }
        let path = environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) {
            if let binaries = PostgresBinaries(directory: directory) { return binaries }
        }
        for directory in versionedDirectories(under: versionedRoot) {
            if let binaries = PostgresBinaries(directory: directory) { return binaries }
        }
        throw LocalPostgresError.binariesNotFound()
    }

    /// `<root>/<version>/bin`, highest version first (`16` before `15` before `9.6`).
    static func versionedDirectories(under root: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        func version(_ name: String) -> [Int] { name.split(separator: ".").map { Int($0) ?? -1 } }
        return names
            .filter { $0.first?.isNumber == true }
            .sorted { version($0).lexicographicallyPrecedes(version($1)) }
            .reversed()
            .map { "\(root)/\($0)/bin" }
    }
}

extension PostgresBinaries {
    /// `pg_basebackup`, beside `pg_ctl` (for standbys; beside the file a symbolic link named pg_ctl points to).
    var pgBasebackup: String {
        URL(fileURLWithPath: pgCtl).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("pg_basebackup").path
    }

    /// The binaries in `directory`, if both are there and executable.
    init?(directory: String) {
        let initdb = directory + "/initdb"
        let pgCtl = directory + "/pg_ctl"
        let files = FileManager.default
        guard files.isExecutableFile(atPath: initdb), files.isExecutableFile(atPath: pgCtl) else { return nil }
        self.init(initdb: initdb, pgCtl: pgCtl)
    }
}
