import AppStoreClient
import Foundation
import ReceiptRules
import Workers

/// Configuration read once, at the edge, from the environment; flags override variables. Secrets (the shared
/// secret, DATABASE_URL with its password) are never taken as flags: they would show in `ps`.
struct Settings {
    let environment: [String: String]

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The login a command connects as, named in the example of `DATABASE_URL`'s hint: one per role of
    /// deploy/sql/roles.sql (docs/deployment.md, Database roles), and the schema's owner for `migrate`.
    enum DatabaseLogin: String {
        case owner = "receipt_owner"
        case worker = "receipt_worker_login"
        case api = "receipt_api_login"
        case `operator` = "receipt_operator_login"

        var role: String {
            switch self {
            case .owner: "the schema owner's login"
            case .worker: "a login in role receipt_worker"
            case .api: "your API layer's login, in role receipt_api"
            case .operator: "a login in role receipt_operator"
            }
        }
    }

    func databaseURL(as login: DatabaseLogin) throws -> String {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationError(
                .missing,
                "DATABASE_URL is not set: set it to the PostgreSQL connection string, e.g. "
                    + "postgresql://\(login.rawValue)@db.internal:5432/payments (\(login.role))"
            )
        }
        return url
    }

    /// Whether a shared secret is given at all (value or file).
    var hasSharedSecret: Bool {
        !(environment["APPLE_SHARED_SECRET"] ?? "").isEmpty || !(environment["APPLE_SHARED_SECRET_FILE"] ?? "").isEmpty
    }

    func sharedSecret() throws -> String {
        if let secret = environment["APPLE_SHARED_SECRET"], !secret.isEmpty { return secret }
        if let path = environment["APPLE_SHARED_SECRET_FILE"], !path.isEmpty {
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(
                    .unreadableFile, "APPLE_SHARED_SECRET_FILE names \(path), which cannot be read"
                )
            }
            let secret = contents.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else {
                throw ConfigurationError(.missing, "APPLE_SHARED_SECRET_FILE (\(path)) is empty")
            }
            return secret
        }
        throw ConfigurationError(
            .missing,
            "the Apple shared secret is missing: set APPLE_SHARED_SECRET, or APPLE_SHARED_SECRET_FILE to a file "
                + "holding it (App Store Connect → your app → App-Specific Shared Secret)"
        )
    }

    func bundleIds(_ flag: String?) throws -> [String] {
        let text = flag ?? environment["APPLE_BUNDLE_IDS"] ?? ""
        let ids = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return ids
    }

    func requiredBundleIds(_ flag: String?) throws -> [String] {
        let ids = try bundleIds(flag)
        guard !ids.isEmpty else {
            throw ConfigurationError(
                .missing, "APPLE_BUNDLE_IDS is not set: set it to your app's bundle id(s), comma separated"
            )
        }
        return ids
    }

    /// Reads each required setting, so that a run names every problem with them at once rather than one per run
    /// (a missing setting, a file that cannot be read, a bad value). Problems of the settings read later are thrown
    /// as they come.
    func requireAll(_ reads: [() throws -> Any]) throws {
        var problems: [ConfigurationError] = []
        for read in reads {
            do {
                _ = try read()
            } catch let error as ConfigurationError {
                problems.append(error)
            }
        }
        guard problems.count < 2 else {
            let code = problems.first { $0.code != .missing }?.code ?? .missing
            let heading = code == .missing
                ? "\(problems.count) required settings are missing:" : "\(problems.count) settings need fixing:"
            throw ConfigurationError(code, ([heading] + problems.map { "  - " + $0.message }).joined(separator: "\n"))
        }
        if let only = problems.first { throw only }
    }

    func string(_ name: String, flag: String?, default value: String) -> String {
        flag ?? environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? value
    }

    func number(_ name: String, flag: Double?, default value: Double, minimum: Double = 0) throws -> Double {
        if let flag { return try check(name, flag, minimum) }
        guard let text = environment[name], !text.isEmpty else { return value }
        guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)), parsed.isFinite else {
            throw ConfigurationError(.invalid, "\(name) must be a number, got \"\(text)\"")
        }
        return try check(name, parsed, minimum)
    }

    func integer(_ name: String, flag: Int?, default value: Int, minimum: Int = 0) throws -> Int {
        // Compared as integers: Int.max through Double rounds up past Int.max, and converting it back traps.
        func checked(_ value: Int) throws -> Int {
            guard value >= minimum else {
                throw ConfigurationError(.outOfRange, "\(name) must be at least \(minimum), got \(value)")
            }
            return value
        }
        if let flag { return try checked(flag) }
        guard let text = environment[name], !text.isEmpty else { return value }
        guard let parsed = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw ConfigurationError(.invalid, "\(name) must be a whole number, got \"\(text)\"")
        }
        return try checked(parsed)
    }

    private func check(_ name: String, _ value: Double, _ minimum: Double) throws -> Double {
        guard value >= minimum else {
            throw ConfigurationError(.outOfRange, "\(name) must be at least \(minimum), got \(value)")
        }
        return value
    }

    func sandboxPolicy(_ flag: String?, allowedUsers: String?) throws -> SandboxPolicy {
        switch string("SANDBOX_POLICY", flag: flag, default: "accept").trimmingCharacters(in: .whitespaces).lowercased() {
        case "accept": return .accept
        case "reject": return .reject
        case "allowlist":
            let users = string("SANDBOX_ALLOWED_USERS", flag: allowedUsers, default: "")
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !users.isEmpty else {
                throw ConfigurationError(
                    .missing, "SANDBOX_POLICY=allowlist needs SANDBOX_ALLOWED_USERS (user ids, comma separated)"
                )
            }
            return .allowlist(Set(users))
        case let other:
            throw ConfigurationError(.invalid, "SANDBOX_POLICY must be accept, reject or allowlist, got \"\(other)\"")
        }
    }

    /// `FAMILY_SHARING`: grant (the default: family members are entitled) or reject.
    func familySharing(_ flag: String?) throws -> FamilySharingPolicy {
        let text = string("FAMILY_SHARING", flag: flag, default: "grant").trimmingCharacters(in: .whitespaces)
        guard let policy = FamilySharingPolicy(rawValue: text.lowercased()) else {
            throw ConfigurationError(.invalid, "FAMILY_SHARING must be grant or reject, got \"\(text)\"")
        }
        return policy
    }
}
