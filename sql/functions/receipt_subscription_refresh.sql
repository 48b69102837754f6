-- Applies one chain of Get All Subscription Statuses (receipt-worker subscriptions-refresh, and `work` by itself for
-- the chains receipt_subscriptions_stale() names) as a notification would be applied (issue 23): it repairs what a
-- missed notification (a DID_RENEW, an EXPIRED, ...) left out. p_result is the document NotificationOutcome encodes,
-- written by the worker after it verified the chain's signedTransactionInfo and signedRenewalInfo:
--   notification  {type: SUBSCRIPTION_STATUS, environment, bundle_id, signed_date_ms (the renewal info's signedDate),
--                  status (Apple's: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked)}
--   transaction   the chain's latest transaction; renewal  its renewal info
-- The app must be ours (receipt_apps). The latest period is credited once to the chain's owner, as a DID_RENEW's is
-- (its `renewed` event), unless it is revoked or a notification applied before revoked it; then
-- receipt_subscription_apply() keeps the chain's row with Apple's status (data signed before the row's signed_at
-- changes nothing). Returns the row's status after, or NULL when nothing was applied.
CREATE OR REPLACE FUNCTION receipt_subscription_refresh(p_result jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_note      jsonb := coalesce(p_result->'notification', '{}');
    v_tx        jsonb := coalesce(p_result->'transaction', '{}');
    v_renewal   jsonb := p_result->'renewal';
    v_env       text := v_note->>'environment';
    v_bundle    text := v_note->>'bundle_id';
    v_signed    timestamptz := to_timestamp((v_note->>'signed_date_ms')::bigint / 1000.0);
    v_original  text := coalesce(nullif(v_tx->>'original_transaction_id', ''), v_tx->>'transaction_id');
    v_expires   timestamptz := to_timestamp((v_tx->>'expires_date_ms')::bigint / 1000.0);
    v_owner     text;
    v_ledger_id bigint;
BEGIN
    IF v_env NOT IN ('Production', 'Sandbox') OR v_original IS NULL OR v_signed IS NULL
       OR NOT EXISTS (SELECT FROM receipt_apps a WHERE a.bundle_id = v_bundle) THEN
        RETURN NULL;
    END IF;
    SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
    WHERE o.environment = v_env AND o.original_transaction_id = v_original;
    -- What is known of revocations (docs/architecture.md, rule 14), as receipt_credit() consults it: a REFUND or
    -- REVOKE (receipt_notification_revocation()) takes this lock exclusively before it records that and looks for the
    -- purchase in the ledger; held shared until this transaction ends, so either it finds this credit (and revokes
    -- it) or the check below finds its entry, never neither. 1380667990 is 'RKRV' in ASCII. In a statement of its
    -- own, so the check below sees what a notification that held it committed.
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1380667990, 0);
    IF v_expires IS NOT NULL AND v_tx->>'revocation_date_ms' IS NULL AND v_owner IS NOT NULL
       AND NOT receipt_known_revoked(v_env, v_tx->>'transaction_id', v_original, v_tx->>'web_order_line_item_id',
                                     (v_tx->>'purchase_date_ms')::bigint) THEN
        v_ledger_id := receipt_period_credit_insert(
            v_env, v_bundle, v_owner, v_tx, v_original, NULL,
            coalesce(to_timestamp((v_tx->>'signed_date_ms')::bigint / 1000.0), v_signed));
        IF v_ledger_id IS NOT NULL THEN
            PERFORM receipt_event(jsonb_build_object(
                'kind', 'renewed', 'notification_type', v_note->>'type', 'user_id', v_owner, 'bundle_id', v_bundle,
                'environment', v_env, 'transaction_id', v_tx->>'transaction_id',
                'original_transaction_id', v_original, 'product_id', v_tx->>'product_id', 'expires_at', v_expires,
                'effective_at', to_timestamp((v_tx->>'purchase_date_ms')::bigint / 1000.0),
                'ledger_id', v_ledger_id));
        END IF;
    END IF;
    RETURN receipt_subscription_apply(v_env, v_bundle, v_signed, v_note, v_tx, v_renewal, NULL);
END $$;
