-- Whether what Apple said last about a purchase is that it is revoked (docs/architecture.md, rule 14), from the
-- notifications applied here (receipt_known_revocations), whether or not the purchase was ever credited. The entries
-- that apply: those of the transaction, of its subscription period (a restore of the period has another transaction
-- id), and the chain-wide ones of its purchase chain made at or after its purchase (REVOKE of Family Sharing, a
-- refunded non-consumable). The newest by Apple's signedDate decides: a REFUND_REVERSED lifts an older REFUND.
--
-- receipt_known_revocation() is the rule: no row when nothing applies, else one row saying whether the newest entry
-- revokes. receipt_credit() passes over a candidate for which it says revoked. It is a set-returning SQL function so
-- that the planner inlines it where it is joined (LEFT JOIN LATERAL … ON true): the lookup becomes part of the caller's
-- plan, rescanned per row, instead of a function call that starts an executor for every candidate credited. Each of
-- the three kinds of entry is looked up on its own, by its id, the first column of its own index; the environment is
-- compared with IS NOT DISTINCT FROM (never NULL here), which no index serves. So no plan, not even one made while the
-- table was empty (a caller's cached plan may be), can look entries up by the environment alone and read every entry
-- of an environment per candidate (migrations/023_known_revocation_indexes.sql).
CREATE OR REPLACE FUNCTION receipt_known_revocation(p_environment text, p_transaction_id text,
                                                    p_original_transaction_id text, p_web_order_line_item_id text,
                                                    p_purchase_date_ms bigint)
RETURNS TABLE (revoked boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT e.revoked
    FROM (SELECT k.action = 'revoked' AS revoked, k.signed_at, k.id
          FROM receipt_known_revocations k
          WHERE k.environment IS NOT DISTINCT FROM p_environment AND k.transaction_id = p_transaction_id
          UNION ALL
          SELECT k.action = 'revoked', k.signed_at, k.id
          FROM receipt_known_revocations k
          WHERE k.environment IS NOT DISTINCT FROM p_environment AND k.web_order_line_item_id = nullif(p_web_order_line_item_id, '')
          UNION ALL
          SELECT k.action = 'revoked', k.signed_at, k.id
          FROM receipt_known_revocations k
          WHERE k.environment IS NOT DISTINCT FROM p_environment AND k.original_transaction_id = nullif(p_original_transaction_id, '')
            AND k.scope = 'chain'
            AND (p_purchase_date_ms IS NULL OR k.effective_at IS NULL
                 OR p_purchase_date_ms <= (extract(epoch FROM k.effective_at) * 1000)::bigint)) e
    ORDER BY e.signed_at DESC, e.id DESC
    LIMIT 1
$$;

-- The same answer as a boolean, for callers that ask about one purchase at a time (receipt_notification_period_credit(),
-- receipt_subscription_refresh(), the reason receipt_credit() gives a job it could not credit).
CREATE OR REPLACE FUNCTION receipt_known_revoked(p_environment text, p_transaction_id text,
                                                 p_original_transaction_id text, p_web_order_line_item_id text,
                                                 p_purchase_date_ms bigint) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT r.revoked
                     FROM receipt_known_revocation(p_environment, p_transaction_id, p_original_transaction_id,
                                                   p_web_order_line_item_id, p_purchase_date_ms) r), false)
$$;
