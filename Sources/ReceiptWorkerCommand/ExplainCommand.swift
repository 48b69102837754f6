import ArgumentParser
import ConsoleOutput
import CustomerSupport
import Foundation

/// `receipt-worker explain`: support's one look at a purchase, read-only.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show an order's, a customer's or a transaction's whole story, oldest first.",
        discussion: """
            Reads, never writes: the orders (receipt_jobs: kind, state, reason, attempts, Apple's status, the \
            purchase credited), the credits (the ledger), their revocations, the App Store Server Notifications of \
            the purchase chains, events, refund requests, subscriptions, purchases Apple announced that waited for a \
            customer, and the appAccountTokens with their owners. No receipt, signed transaction or signed payload \
            is read. Give exactly one of --order (with --bundle-id to name the app), --user (at most 200 rows per \
            section, the latest; a line says when more exist) or --transaction (any transaction id of the chain). \
            Needs DATABASE_URL: the owner, or a login of receipt_operator (deploy/sql/roles.sql). Exit 0 something \
            found, 3 nothing found (or the schema is missing or older: the message says which), 2 bad input, 1 the \
            database could not be read.
            """
    )

    @Option(help: "A customer's order id (the order_id the API layer enqueued, or apple:<transactionId>).")
    var order: String?
    @Option(help: "With --order: only this app's order.")
    var bundleId: String?
    @Option(help: "A customer's user id: all of their orders and credits.")
    var user: String?
    @Option(help: "A transaction id, original or not: everything on its purchase chain.")
    var transaction: String?
    @Flag(help: "Print one JSON object instead of tables.")
    var json = false

    func run() throws {
        let subject = try checkedSubject()
        let settings = Settings()
        let connection = try connect(try settings.databaseURL(as: .operator))
        defer { connection.close() }
        try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        let story: ExplainStory
        do {
            story = try ExplainReader(connection: connection).read(subject)
        } catch {
            throw CommandFailure("explain \(subject.description): \(error)")
        }
        print(json ? try story.json() : story.text())
        if story.isEmpty {
            flushStandardOutput()
            throw ExitCode(Self.nothingFound)
        }
    }

    /// The subject the flags name; bad input is a configuration error (exit 2), as a flag's bad value is.
    private func checkedSubject() throws -> ExplainSubject {
        let given = [("--order", order), ("--bundle-id", bundleId), ("--user", user), ("--transaction", transaction)]
        for (name, value) in given {
            if let value, value.isEmpty || value.utf8.count > 1000 {
                throw ConfigurationError(.invalid, "\(name) needs a value of 1 to 1000 bytes")
            }
        }
        switch (order, user, transaction) {
        case (let order?, nil, nil):
            return .order(order, bundleId: bundleId)
        case (nil, let user?, nil) where bundleId == nil:
            return .user(user)
        case (nil, nil, let transaction?) where bundleId == nil:
            guard transaction.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw ConfigurationError(
                    .invalid, "--transaction takes Apple's transaction id (digits), got \"\(transaction)\""
                )
            }
            return .transaction(transaction)
        case (nil, _, _) where bundleId != nil:
            throw ConfigurationError(.conflict, "--bundle-id goes with --order")
        default:
            throw ConfigurationError(.conflict, "give exactly one of --order, --user and --transaction")
        }
    }

    /// The exit status when nothing matches the subject.
    static let nothingFound: Int32 = 3
}
