-- Mark credited purchases that the receipt now shows cancelled as revoked, and announce each revocation.
CREATE OR REPLACE FUNCTION receipt_revoke(p_environment text, p_cancelled jsonb) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_row record;
    v_count integer := 0;
BEGIN
    IF p_cancelled IS NULL OR jsonb_array_length(p_cancelled) = 0 THEN
        RETURN 0;
    END IF;
    FOR v_row IN
        UPDATE receipt_transactions t
        SET revoked_at = coalesce(to_timestamp((c->>'cancellation_date_ms')::bigint / 1000.0), now()),
            revocation_reason = coalesce('cancelled by Apple (reason ' || (c->>'cancellation_reason') || ')',
                                         'cancelled by Apple')
        FROM jsonb_array_elements(p_cancelled) AS c
        WHERE t.environment = p_environment AND t.transaction_id = c->>'transaction_id' AND t.revoked_at IS NULL
        RETURNING t.id, t.transaction_id, t.order_id, t.user_id, t.bundle_id, t.product_id
    LOOP
        PERFORM pg_notify('receipt_revocations', json_build_object(
            'ledger_id', v_row.id, 'transaction_id', v_row.transaction_id, 'order_id', v_row.order_id,
            'user_id', v_row.user_id, 'bundle_id', v_row.bundle_id, 'product_id', v_row.product_id,
            'environment', p_environment)::text);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END $$;
