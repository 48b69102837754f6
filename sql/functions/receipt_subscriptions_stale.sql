-- The purchase chains to ask Get All Subscription Statuses about (issue 23), at most p_limit, the longest stale first:
--   p_user, p_original   a user's chains, or one chain (receipt_subscriptions, and the ledger's subscription rows of
--                        chains it has no row for yet); NULL: any
--   p_stale_hours        only chains whose period (or grace period) ended at least this long ago with no renewal and
--                        no expiry seen (status still active or grace_period); NULL: any state (with p_user or
--                        p_original only)
--   p_quiet_minutes      only chains nothing was applied to (a notification, a refresh) for this long: `work` asks
--                        about a chain Apple leaves unchanged once per SUBSCRIPTIONS_REFRESH_MINUTES
-- Returns environment, bundle_id, original_transaction_id and the chain's newest transaction id (the one to ask
-- about). Only Production and Sandbox chains: Apple knows no other.
CREATE OR REPLACE FUNCTION receipt_subscriptions_stale(
    p_user text, p_original text, p_stale_hours double precision, p_quiet_minutes double precision, p_limit integer
) RETURNS TABLE (environment text, bundle_id text, original_transaction_id text, transaction_id text)
LANGUAGE sql STABLE AS $$
    WITH chains AS (
        SELECT s.environment, s.bundle_id, s.original_transaction_id, s.user_id, s.status,
               CASE WHEN s.status = 'grace_period' THEN s.grace_period_expires_at ELSE s.expires_at END AS ends_at,
               s.updated_at
        FROM receipt_subscriptions s
        UNION ALL
        SELECT * FROM (
            SELECT DISTINCT ON (t.environment, t.original_transaction_id)
                   t.environment, t.bundle_id, t.original_transaction_id, t.user_id, NULL::text AS status,
                   t.expires_date AS ends_at, t.credited_at AS updated_at
            FROM receipt_transactions t
            WHERE t.expires_date IS NOT NULL AND t.original_transaction_id IS NOT NULL
              AND NOT EXISTS (SELECT FROM receipt_subscriptions s
                              WHERE s.environment = t.environment
                                AND s.original_transaction_id = t.original_transaction_id)
            ORDER BY t.environment, t.original_transaction_id, t.expires_date DESC
        ) ledger
    )
    SELECT c.environment, c.bundle_id, c.original_transaction_id,
           coalesce((SELECT t.transaction_id FROM receipt_transactions t
                     WHERE t.environment = c.environment AND t.original_transaction_id = c.original_transaction_id
                     ORDER BY t.expires_date DESC NULLS LAST, t.id DESC LIMIT 1), c.original_transaction_id)
    FROM chains c
    WHERE c.environment IN ('Production', 'Sandbox')
      AND (p_user IS NULL OR c.user_id = p_user)
      AND (p_original IS NULL OR c.original_transaction_id = p_original)
      AND (p_stale_hours IS NULL
           OR (coalesce(c.status, 'active') IN ('active', 'grace_period')
               AND c.ends_at < now() - make_interval(secs => p_stale_hours * 3600)))
      AND (p_quiet_minutes IS NULL OR c.updated_at < now() - make_interval(secs => p_quiet_minutes * 60))
    ORDER BY c.ends_at NULLS LAST
    LIMIT p_limit
$$;
