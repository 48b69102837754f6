import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Workers

/// What the commands check of the database before they use it: a connection refused for good is a configuration
/// error (exit 2) naming the fix, and a schema that is missing or older than this build is a `SchemaProblem`
/// (exit 3) naming `receipt-worker migrate`.
enum DatabaseCheck {
    /// The configuration error for a connection the server refused for good; nil for an outage or another error.
    static func refusalError(_ error: any Error) -> ConfigurationError? {
        guard let error = error as? PostgresError, let refusal = error.refusal else { return nil }
        return ConfigurationError(
            .invalid,
            "the database refused the connection (DATABASE_URL): \(LogText.oneLine(error.message)). Waiting will "
                + "not help: \(refusal.fix)"
        )
    }

    /// Throws `SchemaProblem` unless the schema is there and current (one-shot commands: `status`, `sweep`); returns
    /// the schema's state in words ("current", or the definitions that differ).
    @discardableResult
    static func requireSchema(_ connection: PostgresConnection, environment: [String: String]) throws -> String {
        let check = try Migrator.check(connection, sqlDirectory: nil, environment: environment)
        if let problem = check.problem { throw problem }
        guard check.changedDefinitions.isEmpty else {
            return "\(check.changedDefinitions.count) definitions differ from this build's sql/ (receipt-worker migrate "
                + "applies them, if this build is the newer)"
        }
        return "current"
    }

    /// `work`'s start: waits for the database as the worker does (an outage is waited for, with backoff), but stops
    /// at a refusal (exit 2) or a missing or older schema (exit 3). Returns false when a shutdown came first.
    static func beforeWork(
        url: String, sqlDirectory: String?, environment: [String: String], logger: Logger,
        stopRequested: () -> Bool
    ) throws -> Bool {
        let session = DatabaseSession(url: url, name: "start-up", logger: logger, stopOnRefusal: true)
        defer { session.close() }
        let answer = session.perform(giveUp: stopRequested) { store in
            try Migrator.check(store.connection, sqlDirectory: sqlDirectory, environment: environment)
        }
        switch answer {
        case nil:
            return false
        case .failure(let error):
            throw refusalError(error) ?? error
        case .success(let check):
            if let problem = check.problem { throw problem }
            if !check.changedDefinitions.isEmpty {
                logger.warning(
                    "the database's SQL definitions differ from this build's sql/ files: run `receipt-worker migrate` if this receipt-worker is the newer one",
                    metadata: ["definitions": "\(check.changedDefinitions.joined(separator: ", "))"]
                )
            }
            return true
        }
    }
}
