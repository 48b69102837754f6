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

    func databaseURL() throws -> String {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationError(
                .missing,
                "DATABASE_URL is not set: set it to the PostgreSQL connection string, e.g. "
                    + "postgresql://receipt_worker_login@db.internal:5432/payments (migrate: the schema owner's login)"
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

    /// Reads each required setting, so that a run names every one that is missing at once rather than one per run.
    /// Other problems (an unreadable file, a bad value) are thrown as they come.
    func requireAll(_ reads: [() throws -> Any]) throws {
        var missing: [String] = []
        for read in reads {
            do {
                _ = try read()
            } catch let error as ConfigurationError where error.code == .missing {
                missing.append(error.message)
            }
        }
        guard missing.count < 2 else {
            throw ConfigurationError(
                .missing,
                "\(missing.count) required settings are missing:\n" + missing.map { "  - " + $0 }.joined(separator: "\n")
            )
        }
        if let only = missing.first { throw ConfigurationError(.missing, only) }
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
