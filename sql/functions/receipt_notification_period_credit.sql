-- A new billing period a verified notification carries (a transaction with an expiry, not revoked: DID_RENEW,
-- SUBSCRIBED, OFFER_REDEEMED, ...) whose purchase chain has an owner (p_owner), applied by
-- receipt_notification_apply() (notification p_id): credited once (its credit key) to the owner, with no order, unless
-- a notification applied before revoked it (Apple's notifications can arrive out of order; receipt_known_revoked()).
-- Its event: `renewed` for a new credit; else the notification's own kind, except for a subscription's notification
-- with renewal info (p_by_state: its events are its changes of state, from receipt_subscription_apply()) and a
-- CONSUMPTION_REQUEST (refund_requested, from receipt_refund_notification()).
-- p_tx: the transaction fields as receipt_notification_apply() reads them; p_event: the event's common columns.
-- Returns the note the notification keeps (last_error) when nothing was credited, else NULL.
CREATE OR REPLACE FUNCTION receipt_notification_period_credit(
    p_id bigint, p_type text, p_env text, p_bundle text, p_owner text, p_signed timestamptz, p_tx jsonb,
    p_event jsonb, p_by_state boolean
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_purchased timestamptz := to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0);
    v_ledger_id bigint;
BEGIN
    -- What is known of revocations (docs/architecture.md, rule 14), as receipt_credit() consults it: a REFUND or
    -- REVOKE (receipt_notification_revocation()) takes this lock exclusively before it records that and looks for the
    -- purchase in the ledger; held shared until this transaction ends, so either it finds this credit (and revokes
    -- it) or the check below finds its entry, never neither. 1380667990 is 'RKRV' in ASCII. In a statement of its
    -- own, so the check below sees what a notification that held it committed.
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1380667990, 0);
    IF receipt_known_revoked(p_env, p_tx->>'transaction_id',
                             coalesce(nullif(p_tx->>'original_transaction_id', ''), p_tx->>'transaction_id'),
                             p_tx->>'web_order_line_item_id', (p_tx->>'purchase_date_ms')::bigint) THEN
        PERFORM receipt_event(p_event || jsonb_build_object(
            'kind', lower(p_type), 'effective_at', v_purchased));
        RETURN 'no credit: a notification applied before revoked this period';
    END IF;
    v_ledger_id := receipt_period_credit_insert(p_env, p_bundle, p_owner, p_tx, p_tx->>'original_transaction_id',
                                                p_id, p_signed);
    IF v_ledger_id IS NOT NULL OR NOT (p_by_state OR p_type = 'CONSUMPTION_REQUEST') THEN
        PERFORM receipt_event(p_event || jsonb_build_object(
            'kind', CASE WHEN v_ledger_id IS NOT NULL THEN 'renewed' ELSE lower(p_type) END,
            'effective_at', v_purchased, 'ledger_id', v_ledger_id));
    END IF;
    RETURN CASE WHEN v_ledger_id IS NULL THEN 'no new credit: this period was credited before' END;
END $$;
