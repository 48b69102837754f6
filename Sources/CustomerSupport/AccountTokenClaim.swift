import PostgresClient

/// The local half of `receipt-worker set-account-token --user-id`: once Apple has put an appAccountToken on a
/// purchase chain, the token is registered to the customer (`register_account_token()`, which credits every purchase
/// kept unclaimed under that token), and the chain's purchases kept unclaimed with no token at all are claimed for the
/// customer (`claim_purchase()`, order `apple:<transactionId>`): they were announced before the token was set, and the
/// token now says whose they are. All in one transaction: a refusal (the token is another customer's, the chain
/// belongs to another user) changes nothing.
///
/// A purchase of the chain kept under another token is left as it is, and listed: that token may be another
/// customer's, not registered yet; support decides (`claim_purchase()`).
public struct AccountTokenClaim {
    /// What the claim did.
    public struct Outcome: Sendable, Hashable, Encodable {
        /// How many purchases `register_account_token()` credited (those kept under this token).
        public var creditedByToken: Int
        /// The chain's token-less purchases claimed, each with the job made or verified for it.
        public var claimed: [Claimed]
        /// The chain's purchases left unclaimed, with why.
        public var leftUnclaimed: [LeftUnclaimed]

        public struct Claimed: Sendable, Hashable, Encodable {
            public var transactionId: String
            public var jobId: String
        }

        public struct LeftUnclaimed: Sendable, Hashable, Encodable {
            public var transactionId: String
            public var appAccountToken: String
        }
    }

    let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    static let register = "SELECT register_account_token($1, $2::uuid, $3) AS credited"

    /// $1 environment, $2 original transaction id, $3 app or NULL: the chain's purchases still unclaimed, oldest first.
    static let unclaimed = """
        SELECT u.transaction_id, u.app_account_token FROM receipt_unclaimed_purchases u
        WHERE u.environment = $1 AND u.original_transaction_id = $2 AND ($3::text IS NULL OR u.bundle_id = $3)
        ORDER BY u.purchase_date, u.transaction_id
        """

    static let claim = "SELECT claim_purchase($1, $2) AS job"

    /// Whether registering would be refused, without keeping anything: the statement runs in a transaction that is
    /// rolled back. Run before Apple is asked, so that a token of another customer (RW409), an unknown app (22023) or a
    /// role without the right (42501) stops the command before Apple's data changes.
    public func check(user: String, token: String, bundleId: String?) throws {
        struct DryRun: Error {}
        do {
            try connection.withTransaction {
                _ = try connection.query(Self.register, [user, token, bundleId])
                throw DryRun()
            }
        } catch is DryRun {
            return
        }
    }

    /// Registers `token` to `user` and claims the chain's token-less purchases kept unclaimed in `environment`.
    public func claim(
        user: String, token: String, bundleId: String?, originalTransactionId: String, environment: String
    ) throws -> Outcome {
        try connection.withTransaction {
            let credited = try connection.query(Self.register, [user, token, bundleId])[0, "credited"]
            var outcome = Outcome(creditedByToken: credited.flatMap { Int($0) } ?? 0, claimed: [], leftUnclaimed: [])
            let waiting = try connection.query(Self.unclaimed, [environment, originalTransactionId, bundleId])
            for row in waiting.rows {
                guard let transactionId = row[0] else { continue }
                if let other = row[1] {
                    outcome.leftUnclaimed.append(.init(transactionId: transactionId, appAccountToken: other))
                    continue
                }
                let job = try connection.query(Self.claim, [transactionId, user])[0, "job"] ?? "-"
                outcome.claimed.append(.init(transactionId: transactionId, jobId: job))
            }
            return outcome
        }
    }
}
