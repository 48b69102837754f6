-- Keeps a purchase chain's receipt_subscriptions row from what Apple signed (issue 23): called by
-- receipt_notification_apply() for every verified notification that carries signed renewal info (SUBSCRIBED,
-- DID_RENEW, DID_FAIL_TO_RENEW, GRACE_PERIOD_EXPIRED, EXPIRED, DID_CHANGE_RENEWAL_STATUS, DID_CHANGE_RENEWAL_PREF,
-- PRICE_INCREASE, OFFER_REDEEMED, RENEWAL_EXTENDED, REFUND, REVOKE, REFUND_REVERSED, ...).
--   p_signed   the notification's signedDate: the row keeps the newest applied (signed_at), and data signed at or
--              before it changes nothing (Apple's notifications arrive out of order, and more than once)
--   p_note, p_tx, p_renewal   the notification, transaction and renewal fields as receipt_notification_apply() reads
--              them (NotificationOutcome)
-- Status: Apple's data.status when given (1 active, 2 expired, 3 billing_retry, 4 grace_period, 5 revoked); else from
-- the data: revoked when the transaction is, grace_period while in billing retry before gracePeriodExpiresDate,
-- billing_retry, expired (EXPIRED, GRACE_PERIOD_EXPIRED out of retry, or a period that ended), else active.
-- The product is the transaction's when it is the chain's current one (a period not older than the row's, or an
-- upgrade, which Apple starts at once); a pending downgrade or crossgrade is auto_renew_product_id.
-- One event per change of state (receipt_subscription_events()), none for a notification that changes nothing.
-- Returns the row's status after, or NULL when nothing was applied (no chain, or not newer than the row).
CREATE OR REPLACE FUNCTION receipt_subscription_apply(
    p_env text, p_bundle text, p_signed timestamptz, p_note jsonb, p_tx jsonb, p_renewal jsonb,
    p_notification_id bigint
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_original text := coalesce(nullif(p_tx->>'original_transaction_id', ''),
                                nullif(p_renewal->>'original_transaction_id', ''), p_tx->>'transaction_id');
    v_type     text := p_note->>'type';
    v_old      receipt_subscriptions;
    v_new      receipt_subscriptions;
    v_found    boolean;
    v_expires  timestamptz := to_timestamp((p_tx->>'expires_date_ms')::bigint / 1000.0);
    v_grace    timestamptz := to_timestamp((p_renewal->>'grace_period_expires_date_ms')::bigint / 1000.0);
    v_current  boolean;
BEGIN
    IF v_original IS NULL OR p_signed IS NULL OR p_renewal IS NULL OR jsonb_typeof(p_renewal) <> 'object' THEN
        RETURN NULL;
    END IF;
    -- Orders two notifications of one chain (their rows' FOR UPDATE does once the row exists).
    PERFORM pg_advisory_xact_lock(hashtextextended('receipt_subscription:' || p_env || ':' || v_original, 0));
    SELECT * INTO v_old FROM receipt_subscriptions s
    WHERE s.environment = p_env AND s.original_transaction_id = v_original
    FOR UPDATE;
    v_found := FOUND;
    IF v_found AND v_old.signed_at IS NOT NULL AND p_signed <= v_old.signed_at THEN
        RETURN NULL;  -- Apple said something newer before: older (or the same) data changes nothing.
    END IF;

    -- The transaction is the chain's current period unless the row knows a later one (a REFUND of an old period).
    v_current := NOT v_found OR v_old.expires_at IS NULL OR v_expires >= v_old.expires_at
                 OR (v_type = 'DID_CHANGE_RENEWAL_PREF' AND p_note->>'subtype' = 'UPGRADE');
    v_new := v_old;
    v_new.environment := p_env;
    v_new.original_transaction_id := v_original;
    v_new.bundle_id := coalesce(p_bundle, v_old.bundle_id);
    v_new.product_id := coalesce(CASE WHEN v_current THEN p_tx->>'product_id' END, v_old.product_id,
                                 p_tx->>'product_id', p_renewal->>'product_id');
    v_new.expires_at := CASE WHEN v_current AND v_expires IS NOT NULL THEN v_expires ELSE v_old.expires_at END;
    v_new.user_id := coalesce((SELECT o.user_id FROM receipt_purchase_owners o
                               WHERE o.environment = p_env AND o.original_transaction_id = v_original),
                              v_old.user_id);
    v_new.grace_period_expires_at := v_grace;
    v_new.auto_renew := CASE (p_renewal->>'auto_renew_status')::integer WHEN 1 THEN true WHEN 0 THEN false
                                                                        ELSE v_old.auto_renew END;
    v_new.auto_renew_product_id := coalesce(p_renewal->>'auto_renew_product_id', v_old.auto_renew_product_id);
    v_new.expiration_reason := CASE (p_renewal->>'expiration_intent')::integer
                                   WHEN 1 THEN 'voluntary' WHEN 2 THEN 'billing_error' WHEN 3 THEN 'price_increase'
                                   WHEN 4 THEN 'product_unavailable' WHEN 5 THEN 'other' END;
    v_new.price_increase := CASE (p_renewal->>'price_increase_status')::integer
                                WHEN 0 THEN 'pending' WHEN 1 THEN 'accepted' END;
    v_new.renewal_price := trim_scale((p_renewal->>'renewal_price')::numeric / 1000);
    v_new.renewal_currency := p_renewal->>'currency';
    v_new.status := CASE (p_note->>'status')::integer
                        WHEN 1 THEN 'active' WHEN 2 THEN 'expired' WHEN 3 THEN 'billing_retry'
                        WHEN 4 THEN 'grace_period' WHEN 5 THEN 'revoked' END;
    IF v_new.status IS NULL THEN
        v_new.status := CASE
            WHEN v_type = 'REVOKE' OR (v_current AND p_tx->>'revocation_date_ms' IS NOT NULL) THEN 'revoked'
            WHEN (p_renewal->>'is_in_billing_retry_period')::boolean THEN
                CASE WHEN v_grace > p_signed THEN 'grace_period' ELSE 'billing_retry' END
            WHEN v_type IN ('EXPIRED', 'GRACE_PERIOD_EXPIRED') THEN 'expired'
            WHEN v_new.expires_at > p_signed THEN 'active'
            WHEN v_new.expires_at IS NULL THEN coalesce(v_old.status, 'active')
            ELSE 'expired' END;
    END IF;
    IF v_new.status NOT IN ('grace_period', 'billing_retry') THEN
        v_new.grace_period_expires_at := NULL;
    END IF;
    v_new.signed_at := p_signed;
    v_new.updated_at := now();

    IF v_new.product_id IS NULL OR v_new.bundle_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO receipt_subscriptions AS s
        (environment, original_transaction_id, bundle_id, product_id, user_id, status, expires_at,
         grace_period_expires_at, auto_renew, auto_renew_product_id, expiration_reason, price_increase,
         renewal_price, renewal_currency, signed_at, updated_at)
    VALUES (v_new.environment, v_new.original_transaction_id, v_new.bundle_id, v_new.product_id, v_new.user_id,
            v_new.status, v_new.expires_at, v_new.grace_period_expires_at, v_new.auto_renew,
            v_new.auto_renew_product_id, v_new.expiration_reason, v_new.price_increase, v_new.renewal_price,
            v_new.renewal_currency, v_new.signed_at, v_new.updated_at)
    ON CONFLICT (environment, original_transaction_id) DO UPDATE
    SET bundle_id = EXCLUDED.bundle_id, product_id = EXCLUDED.product_id, user_id = EXCLUDED.user_id,
        status = EXCLUDED.status, expires_at = EXCLUDED.expires_at,
        grace_period_expires_at = EXCLUDED.grace_period_expires_at, auto_renew = EXCLUDED.auto_renew,
        auto_renew_product_id = EXCLUDED.auto_renew_product_id, expiration_reason = EXCLUDED.expiration_reason,
        price_increase = EXCLUDED.price_increase, renewal_price = EXCLUDED.renewal_price,
        renewal_currency = EXCLUDED.renewal_currency, signed_at = EXCLUDED.signed_at,
        updated_at = EXCLUDED.updated_at;

    PERFORM receipt_subscription_events(CASE WHEN v_found THEN v_old END, v_new, jsonb_build_object(
        'notification_type', v_type, 'subtype', p_note->>'subtype', 'transaction_id', p_tx->>'transaction_id',
        'effective_at', p_signed, 'notification_id', p_notification_id));
    RETURN v_new.status;
END $$;
