-- Marks credited purchases that a receipt now shows cancelled as revoked (receipt_revocation_change(), so the history
-- keeps it), and announces each: an event in receipt_events (kind revoked) and NOTIFY receipt_revocations, whose
-- payload is the ledger row's id alone ({"ledger_id": N}).
CREATE OR REPLACE FUNCTION receipt_revoke(p_environment text, p_cancelled jsonb, p_job_id bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_row record;
    v_count integer := 0;
BEGIN
    IF p_cancelled IS NULL OR jsonb_array_length(p_cancelled) = 0 THEN
        RETURN 0;
    END IF;
    FOR v_row IN
        SELECT t.id, t.transaction_id, t.original_transaction_id, t.order_id, t.user_id, t.bundle_id, t.product_id,
               t.expires_date,
               to_timestamp((c->>'cancellation_date_ms')::bigint / 1000.0) AS cancelled_at,
               coalesce('cancelled by Apple (reason ' || (c->>'cancellation_reason') || ')', 'cancelled by Apple')
                   AS reason
        FROM jsonb_array_elements(p_cancelled) AS c
        JOIN receipt_transactions t ON t.environment = p_environment AND t.transaction_id = c->>'transaction_id'
        WHERE t.revoked_at IS NULL
        ORDER BY t.id
    LOOP
        CONTINUE WHEN NOT receipt_revocation_change(v_row.id, 'revoked', coalesce(v_row.cancelled_at, now()),
                                                    v_row.reason, now(), 'receipt', p_job_id);
        PERFORM receipt_event(jsonb_build_object(
            'kind', 'revoked', 'user_id', v_row.user_id, 'order_id', v_row.order_id, 'bundle_id', v_row.bundle_id,
            'environment', p_environment, 'transaction_id', v_row.transaction_id,
            'original_transaction_id', v_row.original_transaction_id, 'product_id', v_row.product_id,
            'effective_at', coalesce(v_row.cancelled_at, now()), 'expires_at', v_row.expires_date,
            'reason', v_row.reason, 'ledger_id', v_row.id, 'job_id', p_job_id));
        -- The ledger row's id only: any login may NOTIFY any channel, so a listener re-reads the row (revoked_at,
        -- user_id, product_id) rather than act on what a payload says.
        PERFORM pg_catalog.pg_notify('receipt_revocations',
                                     pg_catalog.json_build_object('ledger_id', v_row.id)::text);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END $$;
