import Foundation

/// The SQL of `sql/`, read in the order `sql/apply.sql` gives: the numbered migrations (schema, each applied once)
/// and the current definitions (functions, triggers, views, applied again whenever they change), plus the earlier
/// checksums `sql/migrations/accepted-checksums.txt` accepts for migrations a database may have applied in another
/// form. The same manifest drives `psql -f sql/apply.sql`, so the two ways of applying cannot disagree on the order.
public struct SQLManifest: Sendable {
    /// One SQL file.
    public struct File: Sendable, Hashable {
        /// A migration's version (`001_schema`), or a definition's path relative to `sql/`
        /// (`functions/receipt_claim.sql`).
        public var name: String
        /// The path relative to `sql/`.
        public var path: String
        public var sql: String
    }

    /// The file that lists every other one, in order.
    public static let manifestName = "apply.sql"
    static let acceptedChecksumsPath = "migrations/accepted-checksums.txt"
    static let migrationFolder = "migrations/"
    static let definitionFolders = ["functions/", "triggers/", "views/"]
    /// Applied at the end of every migrate, whatever else was: takes PUBLIC's EXECUTE away from new functions.
    static let privilegesPath = "privileges.sql"

    public let directory: String
    public let migrations: [File]
    public let definitions: [File]
    /// `privileges.sql`, listed last in apply.sql.
    public let privileges: File
    /// Earlier checksums accepted per migration version, including versions whose files were retired.
    public let acceptedChecksums: [String: Set<String>]

    public init(directory: String) throws(QueueError) {
        self.directory = directory
        let manifest = try Self.read(directory, Self.manifestName)
        var migrations: [File] = []
        var definitions: [File] = []
        var privileges: File?
        var listed: Set<String> = []
        for (number, line) in manifest.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard line.hasPrefix("\\ir ") else { continue }
            let path = line.dropFirst(4).trimmingCharacters(in: .whitespaces)
            guard listed.insert(path).inserted else {
                throw QueueError(.sqlFiles, "sql/\(Self.manifestName) line \(number + 1) lists \(path) a second time")
            }
            let sql = try Self.read(directory, path)
            if path.hasPrefix(Self.migrationFolder) {
                let version = String(path.dropFirst(Self.migrationFolder.count).dropLast(4))
                guard path.hasSuffix(".sql"), version.first?.isNumber == true else {
                    throw QueueError(.sqlFiles, "sql/\(path): a migration is named NNN_name.sql")
                }
                migrations.append(File(name: version, path: path, sql: sql))
            } else if Self.definitionFolders.contains(where: path.hasPrefix) {
                definitions.append(File(name: path, path: path, sql: sql))
            } else if path == Self.privilegesPath {
                privileges = File(name: path, path: path, sql: sql)
            } else {
                throw QueueError(
                    .sqlFiles,
                    "sql/\(Self.manifestName) line \(number + 1): \(path) is neither in migrations/ nor in "
                        + Self.definitionFolders.joined(separator: ", ") + " nor \(Self.privilegesPath)"
                )
            }
        }
        guard !migrations.isEmpty else {
            throw QueueError(.sqlFiles, "sql/\(Self.manifestName) lists no migrations (\\ir migrations/NNN_name.sql)")
        }
        guard let privileges else {
            throw QueueError(.sqlFiles, "sql/\(Self.manifestName) does not list \(Self.privilegesPath) (\\ir \(Self.privilegesPath), last)")
        }
        let versions = migrations.map(\.name)
        guard versions == versions.sorted() else {
            throw QueueError(.sqlFiles, "sql/\(Self.manifestName) lists the migrations out of number order")
        }
        for folder in [Self.migrationFolder] + Self.definitionFolders {
            for path in Self.sqlFiles(directory, folder) where !listed.contains(path) {
                throw QueueError(
                    .sqlFiles, "sql/\(path) is not listed in sql/\(Self.manifestName): add an \\ir line for it"
                )
            }
        }
        self.migrations = migrations
        self.definitions = definitions
        self.privileges = privileges
        self.acceptedChecksums = try Self.readAcceptedChecksums(directory)
    }

    private static func read(_ directory: String, _ path: String) throws(QueueError) -> String {
        let full = (directory as NSString).appendingPathComponent(path)
        guard let text = try? String(contentsOfFile: full, encoding: .utf8) else {
            throw QueueError(.sqlFiles, "cannot read \(full)")
        }
        return text
    }

    private static func sqlFiles(_ directory: String, _ folder: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + folder)) ?? []
        return names.filter { $0.hasSuffix(".sql") }.sorted().map { folder + $0 }
    }

    private static func readAcceptedChecksums(_ directory: String) throws(QueueError) -> [String: Set<String>] {
        let full = (directory as NSString).appendingPathComponent(acceptedChecksumsPath)
        guard FileManager.default.fileExists(atPath: full) else { return [:] }
        var accepted: [String: Set<String>] = [:]
        for line in try read(directory, acceptedChecksumsPath).split(separator: "\n") {
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard let version = fields.first, !version.hasPrefix("#") else { continue }
            guard fields.count == 2, fields[1].count == 64 else {
                throw QueueError(.sqlFiles, "sql/\(acceptedChecksumsPath): expected `version sha256`, got \"\(line)\"")
            }
            accepted[String(version), default: []].insert(String(fields[1]))
        }
        return accepted
    }
}
