import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Workers

/// What the commands check of the database before they use it: a connection refused for good is a configuration
/// error (exit 2) naming the fix, and a schema that is missing or older than this build is a `SchemaProblem`
/// (exit 3) naming `receipt-worker migrate`.
enum DatabaseCheck {
    /// The configuration error (exit 2) for a connection that cannot work whatever the wait: a connection string
    /// libpq cannot read (showing both forms it may take), or a connection the server refused for good; nil for an
    /// outage or another error.
    static func configurationError(_ error: any Error) -> ConfigurationError? {
        if let error = error as? PostgresError, error.kind == .badConnectionString {
            return ConfigurationError(
                .invalid,
                "DATABASE_URL is not a valid PostgreSQL connection string: \(error.message). Expected a URL, "
                    + "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…], or key=value pairs, "
                    + "host=HOST port=PORT dbname=DATABASE user=USER"
            )
        }
        return refusalError(error)
    }

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

    /// `work`'s start: a connection string that cannot work or a refusal ends it (exit 2), as does a missing or
    /// older schema (exit 3); an outage is logged ("database not reachable yet; waiting for it") and waited for as
    /// the worker waits (with backoff), a shutdown ending the wait with no try after it. Returns false when a
    /// shutdown came before the database answered.
    static func beforeWork(
        url: String, sqlDirectory: String?, environment: [String: String], logger: Logger,
        stopRequested: () -> Bool
    ) throws -> Bool {
        let checkSchema = { (connection: PostgresConnection) in
            try Migrator.check(connection, sqlDirectory: sqlDirectory, environment: environment)
        }
        let check: SchemaCheck
        do {
            let connection = try PostgresConnection(url)
            defer { connection.close() }
            check = try checkSchema(connection)
        } catch let error as PostgresError where error.isConnectionProblem && error.refusal == nil {
            logger.warning("database not reachable yet; waiting for it", metadata: ["error": "\(error)"])
            if stopRequested() { return false }
            let session = DatabaseSession(url: url, name: "start-up", logger: logger, stopOnRefusal: true)
            defer { session.close() }
            switch session.perform(giveUp: stopRequested, { try checkSchema($0.connection) }) {
            case nil:
                return false
            case .failure(let error):
                throw configurationError(error) ?? error
            case .success(let answer):
                check = answer
            }
        } catch {
            throw configurationError(error) ?? error
        }
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
