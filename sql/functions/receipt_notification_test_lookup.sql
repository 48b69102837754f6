-- `receipt-worker notifications test`: where the TEST notification Apple sent (its signedPayload, from Get Test
-- Notification Status) is here: its row in receipt_notifications (found by the payload's SHA-256, as
-- receive_notification() stores it), state, reason and last error; no row when it never arrived. Reads nothing
-- else, so an operator need not read receipt_notifications' payloads.
-- SECURITY DEFINER; built-ins named with pg_catalog. (see enqueue_receipt.sql).
CREATE OR REPLACE FUNCTION receipt_notification_test_lookup(p_signed_payload text)
RETURNS TABLE (id bigint, state text, reason text, last_error text, source text, notification_type text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT n.id, n.state, n.reason, n.last_error, n.source, n.notification_type
    FROM receipt_notifications n
    WHERE n.payload_hash = pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_signed_payload, 'UTF8')), 'hex')
$$;
