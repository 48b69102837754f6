-- Keeps a purchase chain's receipt_subscriptions row from what Apple signed (issue 23): called by
-- receipt_notification_apply() for every verified notification that carries signed renewal info (SUBSCRIBED,
-- DID_RENEW, DID_FAIL_TO_RENEW, GRACE_PERIOD_EXPIRED, EXPIRED, DID_CHANGE_RENEWAL_STATUS, DID_CHANGE_RENEWAL_PREF,
-- PRICE_INCREASE, OFFER_REDEEMED, RENEWAL_EXTENDED, REFUND, REVOKE, REFUND_REVERSED, ...).
--   p_signed   the notification's signedDate: the row keeps the newest applied (signed_at), and data signed at or
--              before it changes nothing (Apple's notifications arrive out of order, and more than once). Data signed
--              before period_signed_at (a verdict credited a later period from a transaction Apple signed then, or a
--              receipt bought then) changes the renewal preferences only: status, period, product and plan stay
--   p_note, p_tx, p_renewal   the notification, transaction and renewal fields as receipt_notification_apply() reads
--              them (NotificationOutcome)
-- Status: Apple's data.status when given (1 active, 2 expired, 3 billing_retry, 4 grace_period, 5 revoked); else from
-- the data: revoked when the transaction is, grace_period while in billing retry before gracePeriodExpiresDate,
-- billing_retry, expired (EXPIRED, GRACE_PERIOD_EXPIRED out of retry, or a period that ended), else active.
-- The product is the transaction's when it is the chain's current one (a period not older than the row's, or an
-- upgrade, which Apple starts at once); a pending downgrade or crossgrade is auto_renew_product_id.
-- Kept with the period (from the transaction): billing_plan_type and the commitment (period n of m, its end, the
-- price after it); with the renewal preferences (from the renewal info): the next renewal's plan, offer and what
-- happens when the commitment ends; app_transaction_id from either.
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
    v_period   boolean;
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

    -- Whether this data may set the status and the period: not when a verdict credited a period from data signed
    -- after it (a DID_FAIL_TO_RENEW of the period before, delivered late, must not put a renewed chain in retry),
    -- unless it brings a later period still.
    v_period := NOT v_found OR v_old.period_signed_at IS NULL OR p_signed >= v_old.period_signed_at
                OR coalesce(v_expires > v_old.expires_at, false);
    -- The transaction is the chain's current period unless the row knows a later one (a REFUND of an old period).
    v_current := v_period AND (NOT v_found OR v_old.expires_at IS NULL OR v_expires >= v_old.expires_at
                               OR (v_type = 'DID_CHANGE_RENEWAL_PREF' AND p_note->>'subtype' = 'UPGRADE'));
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
    v_new.renewal_billing_plan_type := p_renewal->>'renewal_billing_plan_type';
    v_new.commitment_auto_renew := CASE (p_renewal->>'commitment_auto_renew_status')::integer
                                       WHEN 1 THEN true WHEN 0 THEN false END;
    v_new.commitment_renewal_product_id := p_renewal->>'commitment_auto_renew_product_id';
    v_new.commitment_renewal_billing_plan_type := p_renewal->>'commitment_renewal_billing_plan_type';
    v_new.commitment_renewal_at := to_timestamp((p_renewal->>'commitment_renewal_date_ms')::bigint / 1000.0);
    v_new.commitment_renewal_price := trim_scale((p_renewal->>'commitment_renewal_price')::numeric / 1000);
    v_new.renewal_offer_type := (p_renewal->>'offer_type')::integer;
    v_new.renewal_offer_identifier := p_renewal->>'offer_identifier';
    v_new.renewal_offer_period := p_renewal->>'offer_period';
    v_new.renewal_offer_discount_type := p_renewal->>'offer_discount_type';
    v_new.app_transaction_id := coalesce(p_renewal->>'app_transaction_id', p_tx->>'app_transaction_id',
                                         v_old.app_transaction_id);
    -- Issue 38: whose the chain is as the renewal info says (a UUID, else none), and the win-back offers Apple says
    -- the customer may redeem now (the renewal info's list as it stands: absent, none).
    v_new.app_account_token := coalesce(
        CASE WHEN p_renewal->>'app_account_token' ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'
             THEN (p_renewal->>'app_account_token')::uuid END,
        v_old.app_account_token);
    v_new.eligible_win_back_offer_ids :=
        CASE WHEN jsonb_typeof(p_renewal->'eligible_win_back_offer_ids') = 'array'
             THEN ARRAY(SELECT jsonb_array_elements_text(p_renewal->'eligible_win_back_offer_ids')) END;
    IF v_current THEN
        -- The current period's plan and commitment, as the transaction says (none: a plan without one).
        v_new.billing_plan_type := coalesce(p_tx->>'billing_plan_type', v_old.billing_plan_type);
        v_new.commitment_period := (p_tx->>'commitment_period')::integer;
        v_new.commitment_periods := (p_tx->>'commitment_periods')::integer;
        v_new.commitment_expires_at := to_timestamp((p_tx->>'commitment_expires_date_ms')::bigint / 1000.0);
        v_new.commitment_price := trim_scale((p_tx->>'commitment_price_milliunits')::numeric / 1000);
    END IF;
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
    IF v_period THEN
        v_new.period_signed_at := p_signed;
    ELSE
        -- Older than the period a verdict credited: what it says of the status and the period is past.
        v_new.status := v_old.status;
        v_new.product_id := v_old.product_id;
        v_new.grace_period_expires_at := v_old.grace_period_expires_at;
        v_new.expiration_reason := v_old.expiration_reason;
    END IF;
    v_new.signed_at := p_signed;
    v_new.updated_at := now();

    IF v_new.product_id IS NULL OR v_new.bundle_id IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM receipt_subscription_write(v_new);

    PERFORM receipt_subscription_events(CASE WHEN v_found THEN v_old END, v_new, jsonb_build_object(
        'notification_type', v_type, 'subtype', p_note->>'subtype', 'transaction_id', p_tx->>'transaction_id',
        'effective_at', p_signed, 'notification_id', p_notification_id));
    RETURN v_new.status;
END $$;
