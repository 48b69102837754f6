-- What receipt_notification_apply() hands on about refunds (issue 24), in the same transaction, once a notification
-- is verified, for an app of ours, and not a duplicate (its notificationUUID applied before):
--   CONSUMPTION_REQUEST  Apple asks whether to grant a refund the customer requested: one receipt_refund_requests row
--                        (pending; answered by `work` with Send Consumption Information before respond_by, 12 hours
--                        after Apple's signedDate) and an event of kind refund_requested
--   REFUND               the request's outcome is refunded; the ledger rows of the transaction keep Apple's
--                        revocationType and revocationPercentage (a REFUND_PRORATED leaves the credit in place:
--                        receipt_notification_apply() does not revoke it, receipt_revenue counts that share refunded)
--   REFUND_DECLINED      the request's outcome is declined
--   REFUND_REVERSED      the revocation type and share are cleared with the revocation
-- p_note and p_tx: the notification and transaction fields as receipt_notification_apply() reads them.
CREATE OR REPLACE FUNCTION receipt_refund_notification(
    p_id bigint, p_type text, p_env text, p_owner text, p_signed timestamptz, p_note jsonb, p_tx jsonb
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_request_id bigint;
    v_row        receipt_transactions;
BEGIN
    IF p_type = 'CONSUMPTION_REQUEST' AND p_tx->>'transaction_id' IS NOT NULL THEN
        INSERT INTO receipt_refund_requests (environment, bundle_id, transaction_id, original_transaction_id, user_id,
                                             product_id, reason, respond_by, notification_uuid, notification_id)
        VALUES (p_env, p_note->>'bundle_id', p_tx->>'transaction_id', nullif(p_tx->>'original_transaction_id', ''),
                p_owner, p_tx->>'product_id', p_note->>'consumption_request_reason',
                coalesce(p_signed, now()) + interval '12 hours', (p_note->>'uuid')::uuid, p_id)
        ON CONFLICT (notification_uuid) DO NOTHING
        RETURNING id INTO v_request_id;
        IF v_request_id IS NOT NULL THEN
            PERFORM receipt_event(jsonb_build_object(
                'kind', 'refund_requested', 'notification_type', p_type, 'user_id', p_owner,
                'bundle_id', p_note->>'bundle_id', 'environment', p_env, 'transaction_id', p_tx->>'transaction_id',
                'original_transaction_id', p_tx->>'original_transaction_id', 'product_id', p_tx->>'product_id',
                'effective_at', p_signed, 'reason', p_note->>'consumption_request_reason',
                'notification_id', p_id));
        END IF;
    ELSIF p_type IN ('REFUND', 'REFUND_DECLINED') AND p_tx->>'transaction_id' IS NOT NULL THEN
        UPDATE receipt_refund_requests r
        SET outcome = CASE WHEN p_type = 'REFUND' THEN 'refunded' ELSE 'declined' END
        WHERE r.id = (SELECT q.id FROM receipt_refund_requests q
                      WHERE q.environment = p_env AND q.transaction_id = p_tx->>'transaction_id'
                        AND q.outcome IS NULL
                      ORDER BY q.id DESC LIMIT 1);
    END IF;

    IF p_type = 'REFUND' AND p_tx->>'transaction_id' IS NOT NULL THEN
        FOR v_row IN
            SELECT * FROM receipt_transactions t
            WHERE t.environment = p_env AND t.transaction_id = p_tx->>'transaction_id'
            ORDER BY t.id
        LOOP
            UPDATE receipt_transactions t
            SET revocation_type = coalesce(p_tx->>'revocation_type',
                                           CASE WHEN t.revoked_at IS NOT NULL THEN 'REFUND_FULL' END),
                revocation_percentage = (p_tx->>'revocation_percentage')::integer
            WHERE t.id = v_row.id;
            IF p_tx->>'revocation_type' = 'REFUND_PRORATED' THEN
                -- The credit stays: an event says how much of it Apple refunded.
                PERFORM receipt_event(jsonb_build_object(
                    'kind', 'refunded_prorated', 'notification_type', p_type, 'user_id', v_row.user_id,
                    'order_id', v_row.order_id, 'bundle_id', v_row.bundle_id, 'environment', p_env,
                    'transaction_id', v_row.transaction_id, 'original_transaction_id', v_row.original_transaction_id,
                    'product_id', v_row.product_id,
                    'effective_at', coalesce(to_timestamp((p_tx->>'revocation_date_ms')::bigint / 1000.0), p_signed),
                    'reason', 'refunded ' || coalesce(round((p_tx->>'revocation_percentage')::numeric / 1000, 1)::text,
                                                       'part')
                              || '% by Apple',
                    'ledger_id', v_row.id, 'job_id', v_row.job_id, 'notification_id', p_id));
            END IF;
        END LOOP;
    ELSIF p_type = 'REFUND_REVERSED' AND p_tx->>'transaction_id' IS NOT NULL THEN
        UPDATE receipt_transactions t
        SET revocation_type = NULL, revocation_percentage = NULL
        WHERE t.environment = p_env AND t.transaction_id = p_tx->>'transaction_id'
          AND t.revoked_at IS NULL AND (t.revocation_type, t.revocation_percentage) IS DISTINCT FROM (NULL, NULL);
    END IF;
END $$;
