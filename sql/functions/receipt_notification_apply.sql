-- Writes back what a worker made of one notification it holds (p_lease_token), and applies a verified one to the
-- ledger, in one transaction. p_result (JSON, written by the worker):
--   outcome       verified | rejected | retry | config_error
--   reason, error for rejected (invalid_signature, sandbox_not_allowed, ...) and retries
--   retry_in_seconds, max_attempts    for retry (config_error gives the attempt back)
--   notification  {uuid, type, subtype, environment, bundle_id, app_apple_id, signed_date_ms}
--   transaction   {transaction_id, original_transaction_id, web_order_line_item_id, product_id, quantity,
--                  purchase_date_ms, expires_date_ms, revocation_date_ms, revocation_reason}   (when it has one)
--   renewal       {original_transaction_id, product_id, auto_renew_status, auto_renew_product_id, expiration_intent,
--                  is_in_billing_retry_period, grace_period_expires_date_ms, price_increase_status, renewal_price,
--                  currency, renewal_date_ms, offer_type, offer_identifier, signed_date_ms}  (when it has one)
--   (the document NotificationOutcome encodes: Sources/ReceiptQueue/NotificationOutcome.swift)
-- Returns the notification's new state (applied, duplicate, rejected, retry, dead), or 'lost' when the lease is no
-- longer the caller's.
--
-- A verified notification is checked against receipt_apps (the bundle must be ours; in production appAppleId must be
-- the app's), then deduplicated by notificationUUID (a second one with the same UUID is 'duplicate': Apple's retries
-- and replays change nothing). Then, by type (the events it records are in README, "Events"):
--   REFUND, REVOKE      the credited purchase is revoked (receipt_revocation_change: history kept, newest wins);
--                       REVOKE (Family Sharing) and a refunded non-consumable: every credited transaction of the
--                       purchase chain bought up to the revocation
--   REFUND_REVERSED     its revocation is lifted
--                       All three are also recorded in receipt_known_revocations, credited here or not, and
--                       receipt_credit() consults it: a copy of a revoked purchase sent later is not credited
--   a new billing period (a transaction with an expiry, not revoked; DID_RENEW, SUBSCRIBED, OFFER_REDEEMED, ...):
--                       credited once (its credit key) to the purchase chain's owner, with no order, unless a
--                       notification applied before revoked it
--   anything else       recorded and passed on as an event, except a subscription's notification with renewal info
--                       (SUBSCRIBED, DID_RENEW, DID_FAIL_TO_RENEW, EXPIRED, ...): its events are its changes of state
-- Then, whatever the type: receipt_refund_notification() (refund requests, issue 24) and, for a notification with
-- renewal info, receipt_subscription_apply() (the chain's receipt_subscriptions row and its events, issue 23).
CREATE OR REPLACE FUNCTION receipt_notification_apply(p_id bigint, p_lease_token uuid, p_result jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_outcome   text := p_result->>'outcome';
    v_note      jsonb := coalesce(p_result->'notification', '{}');
    v_tx        jsonb := coalesce(p_result->'transaction', '{}');
    v_attempts  integer;
    v_state     text;
    v_uuid      uuid := (v_note->>'uuid')::uuid;
    v_type      text := v_note->>'type';
    -- The environment the worker verified the notification for, as it is: Xcode and LocalTesting data (accepted
    -- only with APPSTORE_ALLOW_TEST_ENVIRONMENTS=on) finds and credits no Production or Sandbox row.
    v_env       text := coalesce(v_note->>'environment', 'unknown');
    v_bundle    text := v_note->>'bundle_id';
    v_signed    timestamptz := to_timestamp((v_note->>'signed_date_ms')::bigint / 1000.0);
    v_app       receipt_apps;
    v_owner     text;
    v_row       receipt_transactions;
    v_found     boolean := false;
    v_changed   boolean;
    v_action    text;
    v_kind      text;
    v_scope     text;
    v_ledger_id bigint;
    v_effective timestamptz;
    v_expires   timestamptz := to_timestamp((v_tx->>'expires_date_ms')::bigint / 1000.0);
    v_reason    text;
    v_note_text text;
    v_event     jsonb;
    -- A subscription's notification with its renewal info has its events from receipt_subscription_apply(), one per
    -- change of state (and `renewed` for a period credited here), not one per notification.
    v_by_state  boolean := v_type IN ('SUBSCRIBED', 'DID_RENEW', 'DID_FAIL_TO_RENEW', 'GRACE_PERIOD_EXPIRED', 'EXPIRED',
                                      'DID_CHANGE_RENEWAL_STATUS', 'DID_CHANGE_RENEWAL_PREF', 'PRICE_INCREASE',
                                      'OFFER_REDEEMED', 'RENEWAL_EXTENDED')
                           AND coalesce(jsonb_typeof(p_result->'renewal') = 'object', false);
BEGIN
    SELECT n.attempts INTO v_attempts FROM receipt_notifications n
    WHERE n.id = p_id AND n.state = 'running' AND n.lease_token = p_lease_token
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'lost';
    END IF;

    IF v_outcome IN ('retry', 'config_error') THEN
        UPDATE receipt_notifications n
        SET state = CASE WHEN v_outcome = 'retry' AND n.attempts >= coalesce((p_result->>'max_attempts')::integer, 20)
                         THEN 'dead' ELSE 'retry' END,
            reason = CASE WHEN v_outcome = 'retry' AND n.attempts >= coalesce((p_result->>'max_attempts')::integer, 20)
                          THEN 'retries_exhausted' END,
            attempts = CASE WHEN v_outcome = 'config_error' THEN n.attempts - 1 ELSE n.attempts END,
            run_at = now() + make_interval(secs => coalesce((p_result->>'retry_in_seconds')::double precision, 60)),
            last_error = p_result->>'error', locked_by = NULL, lease_token = NULL, lease_until = NULL,
            updated_at = now()
        WHERE n.id = p_id
        RETURNING n.state INTO v_state;
        UPDATE receipt_notifications n SET finished_at = now() WHERE n.id = p_id AND v_state = 'dead';
        RETURN v_state;
    END IF;

    -- What the payload says (for rejected ones, as far as it could be read; the worker sends nothing it could not
    -- verify).
    UPDATE receipt_notifications n
    SET notification_uuid = v_uuid, notification_type = v_type, subtype = v_note->>'subtype',
        environment = v_note->>'environment', bundle_id = v_bundle, signed_at = v_signed,
        -- RESCIND_CONSENT names no purchase: its app transaction (appData's appTransactionId) stands in.
        transaction_id = coalesce(v_tx->>'transaction_id', v_note->>'app_transaction_id'),
        original_transaction_id = v_tx->>'original_transaction_id',
        product_id = v_tx->>'product_id', locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
    WHERE n.id = p_id;

    IF v_outcome = 'verified' THEN
        SELECT * INTO v_app FROM receipt_apps a WHERE a.bundle_id = v_bundle;
        IF NOT FOUND THEN
            v_outcome := 'rejected';
            p_result := p_result || jsonb_build_object(
                'reason', 'bundle_mismatch', 'error', format('the notification is for %s, not an app of ours', v_bundle));
        ELSIF v_env = 'Production' AND v_app.app_apple_id IS NULL THEN
            -- Our configuration, not the notification: it waits (attempt given back) until the app's id is set.
            UPDATE receipt_notifications n
            SET state = 'retry', attempts = n.attempts - 1, run_at = now() + interval '60 seconds',
                last_error = format('configuration: no appAppleId for %s; set APPSTORE_APP_APPLE_IDS', v_bundle)
            WHERE n.id = p_id;
            RETURN 'retry';
        ELSIF v_env = 'Production' AND v_app.app_apple_id IS DISTINCT FROM (v_note->>'app_apple_id')::bigint THEN
            v_outcome := 'rejected';
            p_result := p_result || jsonb_build_object(
                'reason', 'app_mismatch', 'error', format('appAppleId %s is not %s''s (%s)',
                    coalesce(v_note->>'app_apple_id', 'missing'), v_bundle, v_app.app_apple_id));
        END IF;
    END IF;

    IF v_outcome <> 'verified' THEN
        UPDATE receipt_notifications n
        SET state = 'rejected', reason = coalesce(p_result->>'reason', 'invalid_signature'),
            last_error = p_result->>'error', finished_at = now()
        WHERE n.id = p_id;
        RETURN 'rejected';
    END IF;

    -- One notification per UUID is applied; the lock orders two verified payloads of one UUID.
    PERFORM pg_advisory_xact_lock(hashtextextended('receipt_notification:' || v_uuid::text, 0));
    IF EXISTS (SELECT FROM receipt_notifications n WHERE n.notification_uuid = v_uuid AND n.state = 'applied') THEN
        UPDATE receipt_notifications n SET state = 'duplicate', finished_at = now() WHERE n.id = p_id;
        RETURN 'duplicate';
    END IF;

    SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
    WHERE o.environment = v_env AND o.original_transaction_id = v_tx->>'original_transaction_id';
    UPDATE receipt_notifications n SET state = 'applied', user_id = v_owner, finished_at = now() WHERE n.id = p_id;

    v_event := jsonb_build_object(
        'notification_type', v_type, 'subtype', v_note->>'subtype', 'user_id', v_owner, 'bundle_id', v_bundle,
        'environment', v_env, 'transaction_id', coalesce(v_tx->>'transaction_id', v_note->>'app_transaction_id'),
        'original_transaction_id', v_tx->>'original_transaction_id', 'product_id', v_tx->>'product_id',
        'expires_at', v_expires, 'notification_id', p_id);

    -- A REFUND_PRORATED refunds a share and leaves the credit in place (receipt_refund_notification()).
    IF v_type IN ('REFUND', 'REVOKE', 'REFUND_REVERSED')
       AND v_tx->>'revocation_type' IS DISTINCT FROM 'REFUND_PRORATED' THEN
        v_action := CASE WHEN v_type = 'REFUND_REVERSED' THEN 'reinstated' ELSE 'revoked' END;
        v_effective := CASE WHEN v_action = 'revoked'
                            THEN coalesce(to_timestamp((v_tx->>'revocation_date_ms')::bigint / 1000.0), v_signed)
                            ELSE v_signed END;
        v_reason := CASE WHEN v_action = 'revoked' THEN
                        CASE v_type WHEN 'REVOKE' THEN 'revoked by Apple (Family Sharing)'
                                    ELSE 'refunded by Apple' END
                        || coalesce(' (reason ' || (v_tx->>'revocation_reason') || ')', '') END;
        SELECT p.kind INTO v_kind FROM receipt_products p WHERE p.product_id = v_tx->>'product_id';
        v_scope := CASE WHEN v_type = 'REVOKE' OR v_kind = 'non_consumable' THEN 'chain' ELSE 'transaction' END;
        IF v_tx->>'transaction_id' IS NOT NULL THEN
            -- What is known, kept for crediting (receipt_credit() holds this lock shared while it credits): with the
            -- lock, every credit made before is committed and found below, and none is made until this commits.
            -- 1380667990 is 'RKRV' in ASCII. Not needed to lift a revocation: a credit refused meanwhile is safe.
            IF v_action = 'revoked' THEN
                PERFORM pg_advisory_xact_lock(1380667990, 0);
            END IF;
            INSERT INTO receipt_known_revocations (environment, transaction_id, original_transaction_id,
                                                   web_order_line_item_id, scope, action, effective_at, reason,
                                                   signed_at, notification_id)
            VALUES (v_env, v_tx->>'transaction_id', nullif(v_tx->>'original_transaction_id', ''),
                    nullif(v_tx->>'web_order_line_item_id', ''), v_scope, v_action,
                    CASE WHEN v_action = 'revoked' THEN v_effective END, v_reason, v_signed, p_id);
        END IF;
        FOR v_row IN
            SELECT * FROM receipt_transactions t
            WHERE t.environment = v_env
              AND (t.transaction_id = v_tx->>'transaction_id'
                   OR (v_scope = 'chain' AND t.original_transaction_id = v_tx->>'original_transaction_id'
                       AND (t.purchase_date IS NULL OR t.purchase_date <= v_effective)))
            ORDER BY t.id
        LOOP
            v_found := true;
            v_changed := receipt_revocation_change(v_row.id, v_action, v_effective, v_reason, v_signed,
                                                   'notification', NULL, p_id);
            IF v_changed THEN
                PERFORM receipt_event(v_event || jsonb_build_object(
                    'kind', v_action, 'user_id', v_row.user_id, 'order_id', v_row.order_id,
                    'product_id', v_row.product_id, 'effective_at', v_effective, 'reason', v_reason,
                    'ledger_id', v_row.id, 'job_id', v_row.job_id));
                -- The same NOTIFY as a revocation a receipt shows (receipt_revoke()).
                IF v_action = 'revoked' THEN
                    PERFORM pg_notify('receipt_revocations', json_build_object(
                        'ledger_id', v_row.id, 'transaction_id', v_row.transaction_id, 'order_id', v_row.order_id,
                        'user_id', v_row.user_id, 'bundle_id', v_row.bundle_id, 'product_id', v_row.product_id,
                        'environment', v_row.environment)::text);
                END IF;
            ELSE
                v_note_text := 'no change: the ledger already holds this state, or a newer one (by signedDate)';
            END IF;
        END LOOP;
        IF NOT v_found THEN
            -- Nothing credited here: passed on (the owner, if the chain is known).
            PERFORM receipt_event(v_event || jsonb_build_object(
                'kind', v_action, 'effective_at', v_effective, 'reason', v_reason));
        END IF;
    ELSIF v_expires IS NOT NULL AND v_tx->>'revocation_date_ms' IS NULL AND v_owner IS NOT NULL
          AND receipt_known_revoked(v_env, v_tx->>'transaction_id',
                                    coalesce(nullif(v_tx->>'original_transaction_id', ''), v_tx->>'transaction_id'),
                                    v_tx->>'web_order_line_item_id', (v_tx->>'purchase_date_ms')::bigint) THEN
        -- A period a notification applied before revoked (Apple's notifications can arrive out of order): no credit.
        PERFORM receipt_event(v_event || jsonb_build_object(
            'kind', lower(v_type), 'effective_at', to_timestamp((v_tx->>'purchase_date_ms')::bigint / 1000.0)));
        v_note_text := 'no credit: a notification applied before revoked this period';
    ELSIF v_expires IS NOT NULL AND v_tx->>'revocation_date_ms' IS NULL AND v_owner IS NOT NULL THEN
        -- A billing period: credited once, to the chain's owner.
        SELECT p.kind INTO v_kind FROM receipt_products p WHERE p.product_id = v_tx->>'product_id';
        INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                          web_order_line_item_id, product_id, quantity, bundle_id, order_id, user_id,
                                          job_id, purchase_date, expires_date, notification_id,
                                          in_app_ownership_type, price, currency, storefront, offer_type,
                                          offer_discount_type, transaction_reason, billing_plan_type, signed_at)
        VALUES (v_env,
                receipt_credit_key(v_kind, v_tx->>'transaction_id', v_tx->>'original_transaction_id',
                                   v_tx->>'web_order_line_item_id'),
                v_tx->>'transaction_id', v_tx->>'original_transaction_id', v_tx->>'web_order_line_item_id',
                v_tx->>'product_id', coalesce((v_tx->>'quantity')::integer, 1), v_bundle, NULL, v_owner, NULL,
                to_timestamp((v_tx->>'purchase_date_ms')::bigint / 1000.0), v_expires, p_id,
                nullif(v_tx->>'in_app_ownership_type', ''),
                -- What Apple charged for the period (issue 24), as receipt_credit() keeps it: currency units.
                round((v_tx->>'price_milliunits')::numeric / 1000, 3), nullif(v_tx->>'currency', ''),
                nullif(v_tx->>'storefront', ''), (v_tx->>'offer_type')::integer,
                nullif(v_tx->>'offer_discount_type', ''), nullif(v_tx->>'transaction_reason', ''),
                nullif(v_tx->>'billing_plan_type', ''), v_signed)  -- issue 23
        ON CONFLICT (environment, credit_key) DO NOTHING
        RETURNING id INTO v_ledger_id;
        IF v_ledger_id IS NOT NULL OR NOT (v_by_state OR v_type = 'CONSUMPTION_REQUEST') THEN
            PERFORM receipt_event(v_event || jsonb_build_object(
                'kind', CASE WHEN v_ledger_id IS NOT NULL THEN 'renewed' ELSE lower(v_type) END,
                'effective_at', to_timestamp((v_tx->>'purchase_date_ms')::bigint / 1000.0),
                'ledger_id', v_ledger_id));
        END IF;
        IF v_ledger_id IS NULL THEN
            v_note_text := 'no new credit: this period was credited before';
        END IF;
    ELSIF NOT v_by_state AND NOT (v_type = 'CONSUMPTION_REQUEST' AND v_tx->>'transaction_id' IS NOT NULL) THEN
        -- (A CONSUMPTION_REQUEST's event is refund_requested, from receipt_refund_notification().)
        PERFORM receipt_event(v_event || jsonb_build_object(
            'kind', lower(v_type),
            'effective_at', CASE WHEN v_type IN ('EXPIRED', 'GRACE_PERIOD_EXPIRED') THEN v_expires ELSE v_signed END,
            'reason', CASE WHEN p_result->'renewal'->>'expiration_intent' IS NOT NULL
                           THEN 'expiration intent ' || (p_result->'renewal'->>'expiration_intent') END));
    END IF;
    PERFORM receipt_refund_notification(p_id, v_type, v_env, v_owner, v_signed, v_note, v_tx);  -- refunds (issue 24)
    PERFORM receipt_subscription_apply(v_env, v_bundle, v_signed, v_note, v_tx, p_result->'renewal', p_id);  -- issue 23
    IF v_note_text IS NOT NULL THEN
        UPDATE receipt_notifications n SET last_error = v_note_text WHERE n.id = p_id;
    END IF;
    RETURN 'applied';
END $$;
