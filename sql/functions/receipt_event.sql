-- Records one event for the API layer (receipt_events) and sends NOTIFY receipt_events with its id.
-- p_event: the row's columns by name (kind required); returns the event's id.
CREATE OR REPLACE FUNCTION receipt_event(p_event jsonb) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO receipt_events (kind, notification_type, subtype, user_id, order_id, bundle_id, environment,
                                transaction_id, original_transaction_id, product_id, effective_at, expires_at, reason,
                                ledger_id, job_id, notification_id)
    SELECT e.kind, e.notification_type, e.subtype, e.user_id, e.order_id, e.bundle_id, e.environment,
           e.transaction_id, e.original_transaction_id, e.product_id, e.effective_at, e.expires_at, e.reason,
           e.ledger_id, e.job_id, e.notification_id
    FROM pg_catalog.jsonb_populate_record(NULL::receipt_events, p_event) e
    RETURNING id INTO v_id;
    PERFORM pg_catalog.pg_notify('receipt_events', v_id::text);
    RETURN v_id;
END $$;
