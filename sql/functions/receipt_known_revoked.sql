-- Whether what Apple said last about a purchase is that it is revoked (docs/architecture.md, rule 14), from the
-- notifications applied here (receipt_known_revocations), whether or not the purchase was ever credited. The entries
-- that apply: those of the transaction, of its subscription period (a restore of the period has another transaction
-- id), and the chain-wide ones of its purchase chain made at or after its purchase (REVOKE of Family Sharing, a
-- refunded non-consumable). The newest by Apple's signedDate decides: a REFUND_REVERSED lifts an older REFUND.
-- receipt_credit() passes over a candidate for which this is true. A plain SQL expression: inlined by the planner.
CREATE OR REPLACE FUNCTION receipt_known_revoked(p_environment text, p_transaction_id text,
                                                 p_original_transaction_id text, p_web_order_line_item_id text,
                                                 p_purchase_date_ms bigint) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((
        SELECT k.action = 'revoked'
        FROM receipt_known_revocations k
        WHERE k.environment = p_environment
          AND (k.transaction_id = p_transaction_id
               OR k.web_order_line_item_id = nullif(p_web_order_line_item_id, '')
               OR (k.scope = 'chain' AND k.original_transaction_id = nullif(p_original_transaction_id, '')
                   AND (p_purchase_date_ms IS NULL OR k.effective_at IS NULL
                        OR p_purchase_date_ms <= (extract(epoch FROM k.effective_at) * 1000)::bigint)))
        ORDER BY k.signed_at DESC, k.id DESC
        LIMIT 1), false)
$$;
