-- A verdict credited a period of an auto-renewable subscription (ledger row p_ledger_id): its chain's
-- receipt_subscriptions row knows the chain's owner and, when the period is later than the one it holds, the period
-- (product, expires_at, billing plan, active while it lasts). Called by receipt_complete(). A receipt or signed
-- transaction says nothing of renewal preferences or billing retry: those stay as notifications left them, and
-- signed_at (the order of Apple's notifications) is not moved. The period's own time is: period_signed_at becomes
-- the transaction's signedDate (a receipt's: the period's purchase date, before which nothing Apple signed knew of
-- it), so a notification signed before it, delivered later, changes the renewal preferences only, never the status
-- back (receipt_subscription_apply()).
CREATE OR REPLACE FUNCTION receipt_subscription_credited(p_ledger_id bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_row      receipt_transactions;
    v_original text;
    v_old      receipt_subscriptions;
    v_new      receipt_subscriptions;
    v_found    boolean;
    v_mark     timestamptz;
BEGIN
    SELECT * INTO v_row FROM receipt_transactions t WHERE t.id = p_ledger_id;
    IF NOT FOUND OR v_row.expires_date IS NULL OR v_row.revoked_at IS NOT NULL THEN
        RETURN NULL;
    END IF;
    v_original := coalesce(nullif(v_row.original_transaction_id, ''), v_row.transaction_id);
    PERFORM pg_advisory_xact_lock(hashtextextended('receipt_subscription:' || v_row.environment || ':' || v_original,
                                                   0));
    SELECT * INTO v_old FROM receipt_subscriptions s
    WHERE s.environment = v_row.environment AND s.original_transaction_id = v_original
    FOR UPDATE;
    v_found := FOUND;
    v_mark := coalesce(v_row.signed_at, v_row.purchase_date);
    IF v_found AND v_old.expires_at >= v_row.expires_date THEN
        -- Not a later period: only the owner, if the row had none.
        IF v_old.user_id IS NULL THEN
            v_old.user_id := v_row.user_id;
            v_old.updated_at := now();
            PERFORM receipt_subscription_write(v_old);
        END IF;
        RETURN v_old.status;
    END IF;
    v_new := v_old;
    v_new.environment := v_row.environment;
    v_new.original_transaction_id := v_original;
    v_new.bundle_id := v_row.bundle_id;
    v_new.product_id := v_row.product_id;
    v_new.user_id := coalesce(v_old.user_id, v_row.user_id);
    v_new.expires_at := v_row.expires_date;
    v_new.billing_plan_type := coalesce(v_row.billing_plan_type, v_old.billing_plan_type);
    v_new.period_signed_at := greatest(v_mark, v_old.period_signed_at);
    v_new.status := CASE WHEN v_row.expires_date > now() THEN 'active' ELSE 'expired' END;
    IF v_new.status = 'active' THEN
        v_new.grace_period_expires_at := NULL;
        v_new.expiration_reason := NULL;
    END IF;
    v_new.updated_at := now();
    -- Only what a credit knows changes: the rest is the row as the notifications left it (read under the lock).
    PERFORM receipt_subscription_write(v_new);
    IF v_found THEN
        PERFORM receipt_subscription_events(v_old, v_new, jsonb_build_object(
            'transaction_id', v_row.transaction_id, 'effective_at', v_row.purchase_date, 'ledger_id', v_row.id,
            'job_id', v_row.job_id));
    END IF;
    RETURN v_new.status;
END $$;
