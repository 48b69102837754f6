import PostgresClient
import ReceiptQueue

/// Reads one subject's story from the database with `ExplainQueries`: read-only, one connection, no transaction
/// needed (each section is one statement; a row changing between two of them shows in one and not the other).
public struct ExplainReader {
    /// Rows at most per section (and orders and credits found); past it the section says more exist.
    public static let rowLimit = 200

    let connection: PostgresConnection
    let limit: Int

    public init(connection: PostgresConnection, limit: Int = ExplainReader.rowLimit) {
        self.connection = connection
        self.limit = limit
    }

    /// The keys the sections are read with, gathered as the story is read.
    private struct Keys {
        var jobs: [Int64] = []
        var ledger: [Int64] = []
        var environments: Set<String> = []
        var chains: Set<String> = []
        var users: Set<String> = []
        var tokens: Set<String> = []
        var transactions: Set<String> = []
        /// The subject's user, for `--user`: every event, chain and token of theirs.
        var user: String?
    }

    public func read(_ subject: ExplainSubject) throws -> ExplainStory {
        _ = try connection.query("SET TIME ZONE 'UTC'")
        var keys = Keys()
        var jobsMore = false
        var creditsMore = false
        let fetch = String(limit + 1)
        switch subject {
        case .order(let order, let bundleId):
            (keys.jobs, jobsMore) = try ids(ExplainQueries.orderJobs, [order, bundleId, fetch])
            let apps = try connection.query(ExplainQueries.apps, [bundleId]).rows.compactMap { $0.first ?? nil }
            let bundles = bundleId.map { [$0] } ?? apps
            (keys.ledger, creditsMore) = try ids(
                ExplainQueries.orderCredits,
                [order, PostgresArray.text(bundles), PostgresArray.int64(keys.jobs), fetch]
            )
        case .user(let user):
            keys.user = user
            keys.users.insert(user)
            (keys.jobs, jobsMore) = try ids(ExplainQueries.userJobs, [user, fetch])
            (keys.ledger, creditsMore) = try ids(ExplainQueries.userCredits, [user, fetch])
        case .transaction(let transaction):
            keys.transactions.insert(transaction)
            for row in try connection.query(ExplainQueries.transactionChains, [transaction]).rows {
                guard let environment = row[0], let chain = row[1] else { continue }
                keys.environments.insert(environment)
                keys.chains.insert(chain)
            }
            (keys.ledger, creditsMore) = try ids(
                ExplainQueries.chainCredits,
                [PostgresArray.text(keys.environments.sorted()), PostgresArray.text(keys.chains.sorted()), fetch]
            )
        }

        var sections: [ExplainQueries.Section: ExplainSection] = [:]
        let credits = try section(.credits, ExplainQueries.credits, [PostgresArray.int64(keys.ledger)], more: creditsMore)
        sections[.credits] = credits
        for row in credits.values {
            keys.environments.formUnion([row["environment"]].compactMap { $0 })
            keys.chains.formUnion([row["original"]].compactMap { $0 })
            keys.transactions.formUnion([row["transaction"]].compactMap { $0 })
            keys.users.formUnion([row["user"]].compactMap { $0 })
        }
        if case .transaction = subject {
            let credited = credits.values.compactMap { $0["job"].flatMap { Int64($0) } }
            (keys.jobs, jobsMore) = try ids(
                ExplainQueries.transactionJobs,
                [PostgresArray.text(keys.transactions.sorted()), PostgresArray.int64(credited), fetch]
            )
        }
        let orders = try section(.orders, ExplainQueries.orders, [PostgresArray.int64(keys.jobs)], more: jobsMore)
        sections[.orders] = orders
        for row in orders.values {
            keys.users.formUnion([row["user"]].compactMap { $0 })
            keys.tokens.formUnion([row["token"]].compactMap { $0 })
        }

        let chains = PostgresArray.text(keys.chains.sorted())
        let environments = PostgresArray.text(keys.environments.sorted())
        let ledger = PostgresArray.int64(keys.ledger)
        let count = String(limit + 1)
        sections[.revocations] = try section(.revocations, ExplainQueries.revocations, [ledger, count])
        sections[.notifications] = try section(
            .notifications, ExplainQueries.notifications, [chains, environments, count]
        )
        sections[.events] = try section(
            .events, ExplainQueries.events,
            [PostgresArray.text(keys.users.sorted()), PostgresArray.int64(keys.jobs), ledger, chains, keys.user, count]
        )
        let unclaimed = try section(
            .unclaimed, ExplainQueries.unclaimed, [chains, PostgresArray.text(keys.tokens.sorted()), count]
        )
        sections[.unclaimed] = unclaimed
        for row in unclaimed.values {
            keys.transactions.formUnion([row["transaction"]].compactMap { $0 })
            keys.tokens.formUnion([row["token"]].compactMap { $0 })
        }
        sections[.refundRequests] = try section(
            .refundRequests, ExplainQueries.refundRequests, [PostgresArray.text(keys.transactions.sorted()), count]
        )
        sections[.subscriptions] = try section(
            .subscriptions, ExplainQueries.subscriptions, [environments, chains, keys.user, count]
        )
        sections[.tokens] = try section(
            .tokens, ExplainQueries.tokens, [PostgresArray.text(keys.tokens.sorted()), keys.user, count]
        )
        return ExplainStory(
            subject: subject, sections: ExplainQueries.Section.allCases.compactMap { sections[$0] }
        )
    }

    /// The ids the first column of `sql` holds, at most `limit` of them, and whether there were more.
    private func ids(_ sql: String, _ parameters: [String?]) throws -> ([Int64], Bool) {
        let values = try connection.query(sql, parameters).rows.compactMap { row in
            row.first.flatMap { $0 }.flatMap { Int64($0) }
        }
        return (Array(values.prefix(limit)), values.count > limit)
    }

    /// One section: `sql`'s rows (newest first, at most `limit` + 1) told oldest first, cut at `limit`.
    private func section(
        _ kind: ExplainQueries.Section, _ sql: String, _ parameters: [String?], more: Bool = false
    ) throws -> ExplainSection {
        let result = try connection.query(sql, parameters)
        return ExplainSection(
            kind: kind, columns: result.columns, rows: Array(result.rows.prefix(limit).reversed()),
            more: more || result.rows.count > limit
        )
    }
}

extension ExplainSection {
    /// Each row by column name, NULLs left out (to gather the keys of the next sections).
    var values: [[String: String]] {
        rows.map { row in
            var named: [String: String] = [:]
            for (column, value) in zip(columns, row) { named[column] = value }
            return named
        }
    }
}
