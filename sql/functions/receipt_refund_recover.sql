-- Applies one refunded transaction that Get Refund History returned (`receipt-worker refunds --apply`) as its REFUND
-- notification would have been applied, when the ledger lacks it: refunds Apple granted while notifications were not
-- configured (or not delivered) are recovered. p_result is the document NotificationOutcome encodes, written by the
-- command after it verified the signed transaction and found it for the app and environment it asked about:
--   notification  {type: REFUND_HISTORY, environment, bundle_id, signed_date_ms (the transaction's signedDate)}
--   transaction   the refunded transaction (revocation_date_ms, revocation_reason, revocation_type,
--                 revocation_percentage, ...)
-- What a REFUND does, by the same functions: receipt_notification_revocation() revokes the credit (history kept in
-- receipt_revocations, the transaction recorded in receipt_known_revocations so no later copy is credited, a
-- `revoked` event and NOTIFY receipt_revocations per ledger row), unless it is a REFUND_PRORATED, which leaves the
-- credit in place; receipt_refund_notification() keeps Apple's revocation type and share on the ledger rows (revenue,
-- receipt_revenue) and settles a pending refund request. Events carry notification_type REFUND_HISTORY.
-- Returns:
--   applied       the ledger lacked the refund, and it is applied now
--   known         the ledger has it already (its notification, a receipt, an earlier --apply): nothing changes, so a
--                 second run changes nothing
--   not_credited  a REFUND_PRORATED of a purchase this ledger never credited: nothing to change
--   not_ours      the app is not in receipt_apps, the environment not Production or Sandbox, or the transaction
--                 carries no revocation: nothing changes
CREATE OR REPLACE FUNCTION receipt_refund_recover(p_result jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_note     jsonb := coalesce(p_result->'notification', '{}');
    v_tx       jsonb := coalesce(p_result->'transaction', '{}');
    v_env      text := v_note->>'environment';
    v_bundle   text := v_note->>'bundle_id';
    v_id       text := v_tx->>'transaction_id';
    v_signed   timestamptz := to_timestamp((v_note->>'signed_date_ms')::bigint / 1000.0);
    v_prorated boolean := coalesce(v_tx->>'revocation_type' = 'REFUND_PRORATED', false);
    v_owner    text;
BEGIN
    IF v_env IS NULL OR v_env NOT IN ('Production', 'Sandbox') OR v_id IS NULL OR v_signed IS NULL
       OR v_tx->>'revocation_date_ms' IS NULL
       OR NOT EXISTS (SELECT FROM receipt_apps a WHERE a.bundle_id = v_bundle) THEN
        RETURN 'not_ours';
    END IF;
    -- Two recoveries of one transaction at once: the second waits, then finds it known.
    PERFORM pg_advisory_xact_lock(hashtextextended('receipt_refund_recover:' || v_env || ':' || v_id, 0));
    IF v_prorated THEN
        IF NOT EXISTS (SELECT FROM receipt_transactions t WHERE t.environment = v_env AND t.transaction_id = v_id) THEN
            RETURN 'not_credited';
        END IF;
        IF NOT EXISTS (SELECT FROM receipt_transactions t
                       WHERE t.environment = v_env AND t.transaction_id = v_id
                         AND (t.revocation_type, t.revocation_percentage) IS DISTINCT FROM
                             ('REFUND_PRORATED', (v_tx->>'revocation_percentage')::integer)) THEN
            RETURN 'known';
        END IF;
    ELSIF receipt_known_revoked(v_env, v_id, v_tx->>'original_transaction_id', v_tx->>'web_order_line_item_id',
                                (v_tx->>'purchase_date_ms')::bigint)
          AND NOT EXISTS (SELECT FROM receipt_transactions t
                          WHERE t.environment = v_env AND t.transaction_id = v_id AND t.revoked_at IS NULL) THEN
        RETURN 'known';
    END IF;

    SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
    WHERE o.environment = v_env
      AND o.original_transaction_id = coalesce(nullif(v_tx->>'original_transaction_id', ''), v_id);
    IF NOT v_prorated THEN
        PERFORM receipt_notification_revocation(NULL, 'REFUND', v_env, v_signed, v_tx, jsonb_build_object(
            'notification_type', v_note->>'type', 'user_id', v_owner, 'bundle_id', v_bundle, 'environment', v_env,
            'transaction_id', v_id, 'original_transaction_id', v_tx->>'original_transaction_id',
            'product_id', v_tx->>'product_id',
            'expires_at', to_timestamp((v_tx->>'expires_date_ms')::bigint / 1000.0)));
    END IF;
    PERFORM receipt_refund_notification(NULL, 'REFUND', v_env, v_owner, v_signed, v_note, v_tx);
    RETURN 'applied';
END $$;
