-- The events (receipt_events) of one change of a receipt_subscriptions row, p_old (NULL: the chain was not known) to
-- p_new: one per change of state, none when nothing the API layer acts on changed.
--   billing_issue        into billing retry without grace: the renewal charge failed, access ends (Apple retries)
--   grace_period         into the billing grace period: the charge failed, access continues until expires_at
--                        (the grace period's end)
--   billing_recovered    out of billing retry or grace, active again
--   expired              the subscription ended (reason: expiration_reason)
--   auto_renew_disabled, auto_renew_enabled     the customer turned renewal off or on
--   product_change       the product changed (an upgrade, at once), or the product the next period renews to
--                        (a downgrade or crossgrade, pending: reason says which)
--   price_increase       a price increase now pending the customer's consent, or accepted (reason)
-- Revocations and renewals have their events from the ledger (revoked, reinstated, renewed).
-- p_context: the event's other columns (notification_type, subtype, effective_at, notification_id, job_id, ...).
CREATE OR REPLACE FUNCTION receipt_subscription_events(
    p_old receipt_subscriptions, p_new receipt_subscriptions, p_context jsonb
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_known  boolean := p_old.original_transaction_id IS NOT NULL;
    v_was    text := coalesce(p_old.status, 'active');
    v_base   jsonb;
    v_events jsonb[] := '{}';
    v_event  jsonb;
    v_count  integer := 0;
BEGIN
    v_base := jsonb_build_object(
        'user_id', p_new.user_id, 'bundle_id', p_new.bundle_id, 'environment', p_new.environment,
        'original_transaction_id', p_new.original_transaction_id, 'product_id', p_new.product_id,
        'expires_at', p_new.expires_at) || coalesce(p_context, '{}');
    IF p_new.status IS DISTINCT FROM v_was THEN
        v_events := v_events || CASE p_new.status
            WHEN 'billing_retry' THEN jsonb_build_object('kind', 'billing_issue', 'reason', 'billing retry')
            WHEN 'grace_period' THEN jsonb_build_object('kind', 'grace_period',
                                                        'expires_at', p_new.grace_period_expires_at)
            WHEN 'active' THEN CASE WHEN v_was IN ('billing_retry', 'grace_period')
                                    THEN jsonb_build_object('kind', 'billing_recovered') END
            WHEN 'expired' THEN jsonb_build_object('kind', 'expired', 'reason', p_new.expiration_reason)
        END;
    END IF;
    IF p_new.auto_renew IS DISTINCT FROM coalesce(p_old.auto_renew, true) AND p_new.auto_renew IS NOT NULL THEN
        v_events := v_events || jsonb_build_object(
            'kind', CASE WHEN p_new.auto_renew THEN 'auto_renew_enabled' ELSE 'auto_renew_disabled' END);
    END IF;
    IF v_known AND p_new.product_id IS DISTINCT FROM p_old.product_id THEN
        v_events := v_events || jsonb_build_object('kind', 'product_change',
                                                   'reason', format('now %s (was %s)', p_new.product_id,
                                                                    p_old.product_id));
    ELSIF coalesce(p_new.auto_renew_product_id, p_new.product_id)
          IS DISTINCT FROM coalesce(p_old.auto_renew_product_id, p_old.product_id, p_new.product_id) THEN
        v_events := v_events || jsonb_build_object('kind', 'product_change',
                                                   'reason', format('renews to %s from %s', p_new.auto_renew_product_id,
                                                                    p_new.expires_at));
    END IF;
    IF p_new.price_increase IS NOT NULL AND p_new.price_increase IS DISTINCT FROM p_old.price_increase THEN
        v_events := v_events || jsonb_build_object('kind', 'price_increase', 'reason', p_new.price_increase);
    END IF;
    FOREACH v_event IN ARRAY v_events LOOP
        CONTINUE WHEN v_event IS NULL;
        PERFORM receipt_event(v_base || v_event);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END $$;
