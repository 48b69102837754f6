-- For `receipt-worker refunds --all-credited-since`: the purchase chains to ask Get Refund History about, one row per
-- (environment, app, original transaction) with a credit in the ledger since p_since (credited_at), Production and
-- Sandbox only, the chains credited earliest first, at most p_limit; transaction_id is the chain's newest credited
-- transaction (Apple answers for the customer who owns any of them). Reads the ledger once (no index on credited_at:
-- a sweep is an operator's rare recovery, and an index would cost every credit).
CREATE OR REPLACE FUNCTION receipt_refund_candidates(p_since timestamptz, p_limit integer)
RETURNS TABLE (environment text, bundle_id text, original_transaction_id text, transaction_id text)
LANGUAGE sql STABLE AS $$
    SELECT c.environment, c.bundle_id, c.original_transaction_id, c.transaction_id
    FROM (SELECT DISTINCT ON (t.environment, t.bundle_id, coalesce(t.original_transaction_id, t.transaction_id))
                 t.environment, t.bundle_id, coalesce(t.original_transaction_id, t.transaction_id)
                     AS original_transaction_id,
                 t.transaction_id,
                 min(t.credited_at) OVER (PARTITION BY t.environment, t.bundle_id,
                                                       coalesce(t.original_transaction_id, t.transaction_id)) AS first
          FROM receipt_transactions t
          WHERE t.credited_at >= p_since AND t.environment IN ('Production', 'Sandbox') AND t.bundle_id IS NOT NULL
          ORDER BY t.environment, t.bundle_id, coalesce(t.original_transaction_id, t.transaction_id),
                   t.credited_at DESC, t.id DESC) c
    ORDER BY c.first, c.environment, c.original_transaction_id
    LIMIT p_limit
$$;
