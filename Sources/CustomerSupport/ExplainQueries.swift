/// Every statement `receipt-worker explain` runs, in one place: first the ones that find what the subject names (its
/// orders, credits and purchase chains), then one per section of the story. Values arrive as parameters only. Times
/// are UTC to the second (`ExplainReader` sets the session's time zone). The sections read no receipt, signed
/// transaction or signed payload (`receipt_jobs.receipt_data`, `signed_transaction`, `receipt_notifications.
/// signed_payload`, `receipt_unclaimed.purchase`): `receipt_operator` has no right on those columns.
public enum ExplainQueries {
    // MARK: Finding the subject's rows

    /// $1 order id, $2 app or NULL, $3 at most: the jobs of the order, newest first.
    static let orderJobs = """
        SELECT j.id FROM receipt_jobs j
        WHERE j.order_id = $1 AND ($2::text IS NULL OR j.bundle_id = $2)
        ORDER BY j.created_at DESC, j.id DESC LIMIT $3
        """

    /// $1 app or NULL: the apps an order id without `--bundle-id` may belong to.
    static let apps = "SELECT a.bundle_id FROM receipt_apps a WHERE $1::text IS NULL OR a.bundle_id = $1 ORDER BY 1"

    /// $1 order id, $2 apps, $3 the order's job ids, $4 at most: the ledger rows credited to the order (also those
    /// whose job retention deleted), newest first.
    static let orderCredits = """
        SELECT t.id FROM receipt_transactions t
        WHERE (t.bundle_id = ANY($2::text[]) AND t.order_id = $1) OR t.job_id = ANY($3::bigint[])
        ORDER BY t.credited_at DESC, t.id DESC LIMIT $4
        """

    /// $1 user id, $2 at most: the customer's jobs, newest first.
    static let userJobs = """
        SELECT j.id FROM receipt_jobs j WHERE j.user_id = $1 ORDER BY j.created_at DESC, j.id DESC LIMIT $2
        """

    /// $1 user id, $2 at most: the customer's ledger rows, newest first.
    static let userCredits = """
        SELECT t.id FROM receipt_transactions t WHERE t.user_id = $1 ORDER BY t.credited_at DESC, t.id DESC LIMIT $2
        """

    /// $1 transaction id: the purchase chains (environment, original transaction id) it belongs to, from the ledger,
    /// the purchases kept unclaimed, the notifications and the jobs that named it. The environments are those of the
    /// ledger's CHECK constraint, named so that the (environment, transaction_id) indexes serve a lookup by id alone.
    static let transactionChains = """
        SELECT t.environment, t.original_transaction_id FROM receipt_transactions t
        WHERE t.environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting') AND t.transaction_id = $1
        UNION
        SELECT t.environment, t.original_transaction_id FROM receipt_transactions t
        WHERE t.environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting') AND t.original_transaction_id = $1
        UNION
        SELECT u.environment, u.original_transaction_id FROM receipt_unclaimed u
        WHERE (u.environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting') AND u.transaction_id = $1)
           OR u.original_transaction_id = $1
        UNION
        SELECT n.environment, n.original_transaction_id FROM receipt_notifications n
        WHERE n.original_transaction_id = $1 AND n.environment IS NOT NULL
        UNION
        SELECT j.environment, coalesce(j.result->'credited'->>'original_transaction_id', j.transaction_id)
        FROM receipt_jobs j WHERE j.transaction_id = $1 AND j.environment IS NOT NULL
        LIMIT 100
        """

    /// $1 environments, $2 original transaction ids, $3 at most: the ledger rows of those chains, newest first.
    static let chainCredits = """
        SELECT t.id FROM receipt_transactions t
        WHERE t.environment = ANY($1::text[]) AND t.original_transaction_id = ANY($2::text[])
        ORDER BY t.credited_at DESC, t.id DESC LIMIT $3
        """

    /// $1 transaction ids, $2 job ids, $3 at most: the jobs that named one of the transactions or were credited one,
    /// newest first.
    static let transactionJobs = """
        SELECT j.id FROM receipt_jobs j
        WHERE (j.transaction_id = ANY($1::text[]) AND j.transaction_id IS NOT NULL) OR j.id = ANY($2::bigint[])
        ORDER BY j.created_at DESC, j.id DESC LIMIT $3
        """

    // MARK: The sections

    /// The sections, in the order they are told.
    public enum Section: String, Sendable, Hashable, CaseIterable {
        case orders, credits, revocations, notifications, events
        case refundRequests = "refund_requests"
        case subscriptions, unclaimed, tokens

        /// The heading of its text table.
        public var title: String {
            switch self {
            case .orders: "Orders (receipt_jobs)"
            case .credits: "Credits (receipt_transactions, the ledger)"
            case .revocations: "Revocations of those credits (receipt_revocations)"
            case .notifications: "App Store Server Notifications of the purchase chains (receipt_notifications)"
            case .events: "Events (receipt_events)"
            case .refundRequests: "Refund requests (receipt_refund_requests)"
            case .subscriptions: "Subscriptions (receipt_subscriptions)"
            case .unclaimed: "Purchases Apple announced that waited for a customer (receipt_unclaimed)"
            case .tokens: "appAccountTokens and their owners (receipt_account_tokens)"
            }
        }
    }

    /// $1 job ids. `credited` is the purchase the verdict credited, `source` what brought a purchase Apple announced.
    static let orders = """
        SELECT j.id AS job, j.kind, j.bundle_id AS app, j.order_id AS "order", j.user_id AS "user",
               j.product_id AS product, j.state, j.reason, j.attempts, j.apple_status, j.environment,
               j.created_at::timestamp(0) AS created, j.finished_at::timestamp(0) AS finished,
               j.delivered_at::timestamp(0) AS delivered, j.result->'credited'->>'transaction_id' AS credited,
               j.result->>'source' AS source, j.app_account_token AS token, j.last_error
        FROM receipt_jobs j WHERE j.id = ANY($1::bigint[])
        ORDER BY j.created_at DESC, j.id DESC
        """

    /// $1 ledger ids.
    static let credits = """
        SELECT t.id AS ledger, t.environment, t.credit_key, t.transaction_id AS transaction,
               t.original_transaction_id AS original, t.product_id AS product, t.bundle_id AS app,
               t.order_id AS "order", t.user_id AS "user", t.job_id AS job, t.purchase_date::timestamp(0) AS purchased,
               t.expires_date::timestamp(0) AS expires, t.credited_at::timestamp(0) AS credited, t.price, t.currency,
               t.revoked_at::timestamp(0) AS revoked, t.revocation_reason
        FROM receipt_transactions t WHERE t.id = ANY($1::bigint[])
        ORDER BY t.credited_at DESC, t.id DESC
        """

    /// $1 ledger ids, $2 at most.
    static let revocations = """
        SELECT r.id, r.ledger_id AS ledger, r.recorded_at::timestamp(0) AS recorded, r.action,
               r.effective_at::timestamp(0) AS effective, r.reason, r.source, r.notification_id AS notification
        FROM receipt_revocations r WHERE r.ledger_id = ANY($1::bigint[])
        ORDER BY r.recorded_at DESC, r.id DESC LIMIT $2
        """

    /// $1 original transaction ids, $2 environments, $3 at most.
    static let notifications = """
        SELECT n.id, n.received_at::timestamp(0) AS received, n.notification_type AS type, n.subtype, n.environment,
               n.transaction_id AS transaction, n.source, n.state, n.reason, n.finished_at::timestamp(0) AS finished,
               n.last_error
        FROM receipt_notifications n
        WHERE n.original_transaction_id = ANY($1::text[]) AND n.environment = ANY($2::text[])
        ORDER BY n.received_at DESC, n.id DESC LIMIT $3
        """

    /// $1 users, $2 job ids, $3 ledger ids, $4 original transaction ids, $5 the subject's user (all of their events)
    /// or NULL, $6 at most. Events are found through their user (an event with none, about a purchase nobody was
    /// credited for, is not shown).
    static let events = """
        SELECT e.id, e.created_at::timestamp(0) AS created, e.kind, e.notification_type AS type, e.subtype,
               e.user_id AS "user", e.order_id AS "order", e.transaction_id AS transaction,
               e.effective_at::timestamp(0) AS effective, e.expires_at::timestamp(0) AS expires, e.reason,
               e.delivered_at::timestamp(0) AS delivered
        FROM receipt_events e
        WHERE e.user_id = ANY($1::text[])
          AND (e.user_id = $5 OR e.job_id = ANY($2::bigint[]) OR e.ledger_id = ANY($3::bigint[])
               OR e.original_transaction_id = ANY($4::text[]))
        ORDER BY e.created_at DESC, e.id DESC LIMIT $6
        """

    /// $1 transaction ids, $2 at most. Not the answer sent to Apple (consumption data): its outcome.
    static let refundRequests = """
        SELECT r.id, r.received_at::timestamp(0) AS received, r.environment, r.transaction_id AS transaction,
               r.product_id AS product, r.user_id AS "user", r.reason, r.state, r.skip_reason, r.outcome,
               r.respond_by::timestamp(0) AS respond_by, r.answered_at::timestamp(0) AS answered, r.last_error
        FROM receipt_refund_requests r WHERE r.transaction_id = ANY($1::text[])
        ORDER BY r.received_at DESC, r.id DESC LIMIT $2
        """

    /// $1 environments, $2 original transaction ids, $3 the subject's user (all of their chains) or NULL, $4 at most.
    static let subscriptions = """
        SELECT s.environment, s.original_transaction_id AS original, s.product_id AS product, s.user_id AS "user",
               s.status, s.expires_at::timestamp(0) AS expires, s.grace_period_expires_at::timestamp(0) AS grace_until,
               s.auto_renew, s.auto_renew_product_id AS renews_to, s.expiration_reason,
               s.created_at::timestamp(0) AS created, s.updated_at::timestamp(0) AS updated
        FROM receipt_subscriptions s
        WHERE (s.environment = ANY($1::text[]) AND s.original_transaction_id = ANY($2::text[])) OR s.user_id = $3
        ORDER BY s.created_at DESC, s.original_transaction_id DESC LIMIT $4
        """

    /// $1 original transaction ids, $2 tokens, $3 at most: the chains' purchases kept unclaimed (and when and to which
    /// ledger row each was credited since), and those still waiting under one of the tokens.
    static let unclaimed = """
        SELECT u.id, u.first_seen::timestamp(0) AS first_seen, u.environment, u.bundle_id AS app,
               u.product_id AS product, u.transaction_id AS transaction, u.original_transaction_id AS original,
               u.app_account_token AS token, u.source, u.note, u.claimed_at::timestamp(0) AS claimed,
               u.ledger_id AS ledger
        FROM receipt_unclaimed u
        WHERE u.original_transaction_id = ANY($1::text[])
           OR (u.app_account_token = ANY($2::uuid[]) AND u.claimed_at IS NULL)
        ORDER BY u.first_seen DESC, u.id DESC LIMIT $3
        """

    /// $1 tokens, $2 the subject's user (all of their tokens) or NULL, $3 at most.
    static let tokens = """
        SELECT a.app_account_token AS token, a.user_id AS "user", a.bundle_id AS app,
               a.created_at::timestamp(0) AS registered
        FROM receipt_account_tokens a
        WHERE a.app_account_token = ANY($1::uuid[]) OR a.user_id = $2
        ORDER BY a.created_at DESC, a.app_account_token DESC LIMIT $3
        """
}
