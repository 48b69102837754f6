-- A RENEWAL_EXTENDED notification (notification p_id, signed by Apple at p_signed) moves the expiry of the period it
-- carries (issue 38): the ledger row of that period (same environment and chain, the same transaction or web order
-- line item) gets the transaction's new expires_date, recorded first in receipt_period_extensions (the ledger's guard
-- lets expires_date change only to the newest entry there). Only later, never earlier (Apple's notifications arrive
-- out of order: an older extension delivered late changes nothing), never a revoked period nor one without an expiry.
-- ledger_id: the period's row, NULL when it was not credited here (receipt_notification_apply() then credits it, with
-- its new expiry, as any period a notification carries); moved: whether its expiry moved now.
CREATE OR REPLACE FUNCTION receipt_period_extend(
    p_id bigint, p_env text, p_signed timestamptz, p_tx jsonb, OUT ledger_id bigint, OUT moved boolean
)
LANGUAGE plpgsql AS $$
DECLARE
    v_row     receipt_transactions;
    v_expires timestamptz := to_timestamp((p_tx->>'expires_date_ms')::bigint / 1000.0);
BEGIN
    moved := false;
    SELECT * INTO v_row FROM receipt_transactions t
    WHERE t.environment = p_env
      AND t.original_transaction_id = coalesce(nullif(p_tx->>'original_transaction_id', ''), p_tx->>'transaction_id')
      AND (t.transaction_id = p_tx->>'transaction_id'
           OR (p_tx->>'web_order_line_item_id' IS NOT NULL
               AND t.web_order_line_item_id = p_tx->>'web_order_line_item_id'))
    ORDER BY t.id
    LIMIT 1
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    ledger_id := v_row.id;
    IF v_expires IS NULL OR v_row.expires_date IS NULL OR v_row.revoked_at IS NOT NULL
       OR v_expires <= v_row.expires_date THEN
        RETURN;
    END IF;
    INSERT INTO receipt_period_extensions (ledger_id, expires_before, expires_after, notification_id, signed_at)
    VALUES (v_row.id, v_row.expires_date, v_expires, p_id, p_signed);
    UPDATE receipt_transactions t SET expires_date = v_expires WHERE t.id = v_row.id;
    moved := true;
END $$;
