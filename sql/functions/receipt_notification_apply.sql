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
-- This function holds the checks and the order; each rule of what a notification does has a function of its own.
-- A verified notification is checked against receipt_apps (the bundle must be ours; in production appAppleId must be
-- the app's), then deduplicated by notificationUUID (a second one with the same UUID is 'duplicate': Apple's retries
-- and replays change nothing). Then, by type (the events it records are in README, "Events"):
--   REFUND, REVOKE, REFUND_REVERSED       receipt_notification_revocation() (not a REFUND_PRORATED)
--   RENEWAL_EXTENDED of a period credited here    receipt_period_extend() moves its expiry: event renewal_extended
--   RENEWAL_EXTENSION SUMMARY (`summary` in place of `data`)    receipt_renewal_extension_summary()
--   EXTERNAL_PURCHASE_TOKEN (`externalPurchaseToken`)    an event external_purchase_token
--   a shape with none of data, summary, externalPurchaseToken, appData (notification.shape 'unknown': Apple's
--   signature held, so it is no forgery; no app to check)    kept, applied, an event unknown_shape
--   a new billing period (a transaction with an expiry, not revoked, of a chain with an owner: DID_RENEW,
--   SUBSCRIBED, OFFER_REDEEMED, ...)      receipt_notification_period_credit()
--   a purchase of a chain nobody owns (ONE_TIME_CHARGE, SUBSCRIBED, DID_RENEW, OFFER_REDEEMED,
--   DID_CHANGE_RENEWAL_PREF)              receipt_announced_credit(): its token's customer, or kept unclaimed
--   anything else                         receipt_notification_event(), except a subscription's notification with
--                                         renewal info (SUBSCRIBED, DID_RENEW, DID_FAIL_TO_RENEW, EXPIRED, ...): its
--                                         events are its changes of state, and a CONSUMPTION_REQUEST
-- Then, whatever the type: receipt_refund_notification() (refund requests, issue 24) and, for a notification with
-- renewal info, receipt_subscription_apply() (the chain's receipt_subscriptions row and its events, issue 23).
-- The notification's row is written once, at the end (what the payload says, the state, the owner, the note): one
-- row version per outcome after the claim's. Nothing called here reads that row.
CREATE OR REPLACE FUNCTION receipt_notification_apply(p_id bigint, p_lease_token uuid, p_result jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_outcome   text := p_result->>'outcome';
    v_note      jsonb := coalesce(p_result->'notification', '{}');
    v_tx        jsonb := coalesce(p_result->'transaction', '{}');
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
    v_note_text text;
    v_event     jsonb;
    v_credit    record;
    v_shape     text := coalesce(v_note->>'shape', 'data');
    v_ext_ledger bigint;
    v_ext_moved boolean;
    -- A subscription's notification with its renewal info has its events from receipt_subscription_apply(), one per
    -- change of state (and `renewed` for a period credited here), not one per notification.
    v_by_state  boolean := v_type IN ('SUBSCRIBED', 'DID_RENEW', 'DID_FAIL_TO_RENEW', 'GRACE_PERIOD_EXPIRED', 'EXPIRED',
                                      'DID_CHANGE_RENEWAL_STATUS', 'DID_CHANGE_RENEWAL_PREF', 'PRICE_INCREASE',
                                      'OFFER_REDEEMED', 'RENEWAL_EXTENDED')
                           AND coalesce(jsonb_typeof(p_result->'renewal') = 'object', false);
BEGIN
    PERFORM FROM receipt_notifications n
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
            updated_at = now(),
            finished_at = CASE WHEN v_outcome = 'retry'
                                    AND n.attempts >= coalesce((p_result->>'max_attempts')::integer, 20)
                               THEN now() ELSE n.finished_at END
        WHERE n.id = p_id
        RETURNING n.state INTO v_state;
        RETURN v_state;
    END IF;

    IF v_outcome = 'verified' AND v_shape <> 'unknown' THEN
        SELECT * INTO v_app FROM receipt_apps a WHERE a.bundle_id = v_bundle;
        IF NOT FOUND THEN
            v_outcome := 'rejected';
            p_result := p_result || jsonb_build_object(
                'reason', 'bundle_mismatch', 'error', format('the notification is for %s, not an app of ours', v_bundle));
        ELSIF v_env = 'Production' AND v_app.app_apple_id IS NULL THEN
            -- Our configuration, not the notification: it waits (attempt given back) until the app's id is set.
            v_state := 'retry';
        ELSIF v_env = 'Production' AND v_app.app_apple_id IS DISTINCT FROM (v_note->>'app_apple_id')::bigint THEN
            v_outcome := 'rejected';
            p_result := p_result || jsonb_build_object(
                'reason', 'app_mismatch', 'error', format('appAppleId %s is not %s''s (%s)',
                    coalesce(v_note->>'app_apple_id', 'missing'), v_bundle, v_app.app_apple_id));
        END IF;
    END IF;

    IF v_state IS NULL AND v_outcome <> 'verified' THEN
        v_state := 'rejected';
    ELSIF v_state IS NULL THEN
        -- One notification per UUID is applied; the lock orders two verified payloads of one UUID.
        PERFORM pg_advisory_xact_lock(hashtextextended('receipt_notification:' || v_uuid::text, 0));
        IF EXISTS (SELECT FROM receipt_notifications n WHERE n.notification_uuid = v_uuid AND n.state = 'applied') THEN
            v_state := 'duplicate';
        END IF;
    END IF;

    IF v_state IS NULL THEN
        v_state := 'applied';
        SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
        WHERE o.environment = v_env AND o.original_transaction_id = v_tx->>'original_transaction_id';
        v_event := jsonb_build_object(
            'notification_type', v_type, 'subtype', v_note->>'subtype', 'user_id', v_owner, 'bundle_id', v_bundle,
            'environment', v_env,
            'transaction_id', coalesce(v_tx->>'transaction_id', v_note->>'app_transaction_id',
                                       v_note->>'external_purchase_id'),
            'original_transaction_id', v_tx->>'original_transaction_id', 'product_id', v_tx->>'product_id',
            'expires_at', to_timestamp((v_tx->>'expires_date_ms')::bigint / 1000.0), 'notification_id', p_id);

        IF v_type = 'RENEWAL_EXTENDED' AND v_tx->>'expires_date_ms' IS NOT NULL THEN
            SELECT e.ledger_id, e.moved INTO v_ext_ledger, v_ext_moved FROM receipt_period_extend(p_id, v_env, v_signed, v_tx) e;
        END IF;

        -- A REFUND_PRORATED refunds a share and leaves the credit in place (receipt_refund_notification()).
        IF v_type IN ('REFUND', 'REVOKE', 'REFUND_REVERSED')
           AND v_tx->>'revocation_type' IS DISTINCT FROM 'REFUND_PRORATED' THEN
            v_note_text := receipt_notification_revocation(p_id, v_type, v_env, v_signed, v_tx, v_event);
        ELSIF v_shape = 'unknown' THEN
            v_note_text := 'a shape this version does not know (no data, summary, externalPurchaseToken or appData): '
                           || 'kept as it came';
            PERFORM receipt_event(v_event || jsonb_build_object(
                'kind', 'unknown_shape', 'effective_at', v_signed,
                'reason', v_type || coalesce('/' || (v_note->>'subtype'), '')));
        ELSIF v_shape = 'summary' THEN
            v_note_text := receipt_renewal_extension_summary(p_id, v_env, v_bundle, v_signed, v_note);
        ELSIF v_shape = 'external_purchase_token' THEN
            PERFORM receipt_event(v_event || jsonb_build_object(
                'kind', 'external_purchase_token',
                'effective_at', coalesce(to_timestamp((v_note->>'token_creation_date_ms')::bigint / 1000.0), v_signed),
                'reason', v_note->>'subtype'));
        ELSIF v_ext_ledger IS NOT NULL THEN
            -- RENEWAL_EXTENDED of a period credited here: its expiry moved (or had moved further already).
            IF v_ext_moved THEN
                PERFORM receipt_event(v_event || jsonb_build_object(
                    'kind', 'renewal_extended', 'effective_at', v_signed, 'ledger_id', v_ext_ledger));
            ELSE
                v_note_text := 'no change: the period ends at or after this extension''s expiry, or is revoked';
            END IF;
        ELSIF v_tx->>'expires_date_ms' IS NOT NULL AND v_tx->>'revocation_date_ms' IS NULL AND v_owner IS NOT NULL THEN
            v_note_text := receipt_notification_period_credit(p_id, v_type, v_env, v_bundle, v_owner, v_signed, v_tx,
                                                              v_event, v_by_state);
        ELSIF v_type IN ('ONE_TIME_CHARGE', 'SUBSCRIBED', 'DID_RENEW', 'OFFER_REDEEMED', 'DID_CHANGE_RENEWAL_PREF')
              AND v_tx->>'transaction_id' IS NOT NULL AND v_tx->>'revocation_date_ms' IS NULL AND v_owner IS NULL THEN
            -- A purchase no order here has credited, announced by Apple (issue 37): credited to the customer its
            -- appAccountToken is registered to, or kept unclaimed. Its event is `credited`; kept unclaimed, the
            -- notification's own (or its changes of state, for a subscription's).
            SELECT c.ledger_id, c.note INTO v_credit FROM receipt_announced_credit(
                v_env, v_bundle, v_tx, 'notification', p_id, v_signed, p_rules => p_result->'credit_rules') c;
            IF v_credit.ledger_id IS NOT NULL THEN
                SELECT t.user_id INTO v_owner FROM receipt_transactions t WHERE t.id = v_credit.ledger_id;
            ELSE
                v_note_text := v_credit.note;
                IF NOT v_by_state THEN
                    PERFORM receipt_notification_event(v_type, v_signed, v_tx, p_result->'renewal', v_event);
                END IF;
            END IF;
        ELSIF NOT v_by_state AND NOT (v_type = 'CONSUMPTION_REQUEST' AND v_tx->>'transaction_id' IS NOT NULL) THEN
            -- (A CONSUMPTION_REQUEST's event is refund_requested, from receipt_refund_notification().)
            PERFORM receipt_notification_event(v_type, v_signed, v_tx, p_result->'renewal', v_event);
        END IF;
        PERFORM receipt_refund_notification(p_id, v_type, v_env, v_owner, v_signed, v_note, v_tx);  -- issue 24
        PERFORM receipt_subscription_apply(v_env, v_bundle, v_signed, v_note, v_tx, p_result->'renewal', p_id);
    END IF;

    -- The write-back, once: what the payload says (for rejected ones, as far as it could be read; the worker sends
    -- nothing it could not verify), and the outcome.
    UPDATE receipt_notifications n
    SET notification_uuid = v_uuid, notification_type = v_type, subtype = v_note->>'subtype',
        environment = v_note->>'environment', bundle_id = v_bundle, signed_at = v_signed,
        -- RESCIND_CONSENT names no purchase: its app transaction (appData's appTransactionId) stands in; an
        -- EXTERNAL_PURCHASE_TOKEN's externalPurchaseId likewise.
        transaction_id = coalesce(v_tx->>'transaction_id', v_note->>'app_transaction_id',
                                  v_note->>'external_purchase_id'),
        original_transaction_id = v_tx->>'original_transaction_id',
        product_id = v_tx->>'product_id', locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now(),
        state = v_state,
        user_id = CASE WHEN v_state = 'applied' THEN v_owner ELSE n.user_id END,
        reason = CASE WHEN v_state = 'rejected' THEN coalesce(p_result->>'reason', 'invalid_signature')
                      ELSE n.reason END,
        last_error = CASE v_state
                         WHEN 'rejected' THEN p_result->>'error'
                         WHEN 'retry' THEN format('configuration: no appAppleId for %s; set APPSTORE_APP_APPLE_IDS',
                                                  v_bundle)
                         ELSE coalesce(v_note_text, n.last_error) END,
        -- Our configuration's retry: the attempt is given back, and it waits until the app's id is set.
        attempts = CASE WHEN v_state = 'retry' THEN n.attempts - 1 ELSE n.attempts END,
        run_at = CASE WHEN v_state = 'retry' THEN now() + interval '60 seconds' ELSE n.run_at END,
        finished_at = CASE WHEN v_state = 'retry' THEN n.finished_at ELSE now() END
    WHERE n.id = p_id;
    RETURN v_state;
END $$;
