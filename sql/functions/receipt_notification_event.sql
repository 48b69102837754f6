-- The event of a verified notification no other rule records (receipt_notification_apply()): its kind is the
-- notification's type in lower case (did_change_renewal_status, refund_declined, test, an unknown type kept raw, ...),
-- effective at its expiry for EXPIRED and GRACE_PERIOD_EXPIRED, else at Apple's signedDate (p_signed); the renewal
-- info's expiration intent, when given, is its reason. p_event: the event's common columns.
CREATE OR REPLACE FUNCTION receipt_notification_event(
    p_type text, p_signed timestamptz, p_tx jsonb, p_renewal jsonb, p_event jsonb
) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN receipt_event(p_event || jsonb_build_object(
        'kind', lower(p_type),
        'effective_at', CASE WHEN p_type IN ('EXPIRED', 'GRACE_PERIOD_EXPIRED')
                             THEN to_timestamp((p_tx->>'expires_date_ms')::bigint / 1000.0) ELSE p_signed END,
        'reason', CASE WHEN p_renewal->>'expiration_intent' IS NOT NULL
                       THEN 'expiration intent ' || (p_renewal->>'expiration_intent') END));
END $$;
