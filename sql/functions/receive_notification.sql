-- Takes in one App Store Server Notification V2 as Apple posted it (the value of "signedPayload") and returns its
-- row in receipt_notifications. For API layers with an HTTPS endpoint of their own: call this, commit, then answer
-- Apple 200. Nothing is verified here (the workers verify and apply it): only the shape is checked, so a payload that
-- cannot be a JWS is refused at once (SQLSTATE 22023) and Apple's delivery can be answered 400.
-- The same bytes twice (Apple retrying a delivery, a replay from Notification History) are one row: the first id is
-- returned. A different payload claiming the same notificationUUID is kept: only its verification tells which one
-- is Apple's. NOTIFY receipt_notifications wakes the workers.
-- source: sql (this call), receiver (`receipt-worker notifications`), history (Notification History).
-- SECURITY DEFINER, like enqueue_receipt(); built-ins named with pg_catalog. (see enqueue_receipt.sql).
CREATE OR REPLACE FUNCTION receive_notification(signed_payload text, source text DEFAULT 'sql') RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_hash text;
    v_id bigint;
BEGIN
    IF coalesce(signed_payload, '') = '' THEN
        RAISE EXCEPTION 'receive_notification: signed_payload is empty'
            USING ERRCODE = 'invalid_parameter_value', HINT = 'pass the value of "signedPayload" from Apple''s body';
    END IF;
    IF pg_catalog.octet_length(signed_payload) > 1048576 THEN
        RAISE EXCEPTION 'receive_notification: signed_payload is % bytes, over 1 MiB',
                        pg_catalog.octet_length(signed_payload)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF signed_payload !~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' THEN
        RAISE EXCEPTION 'receive_notification: signed_payload is not a JWS in compact form (three base64url parts)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_hash := pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(signed_payload, 'UTF8')), 'hex');
    INSERT INTO receipt_notifications (signed_payload, payload_hash, source)
    VALUES (signed_payload, v_hash, coalesce(receive_notification.source, 'sql'))
    ON CONFLICT (payload_hash) DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        SELECT n.id INTO v_id FROM receipt_notifications n WHERE n.payload_hash = v_hash;
    ELSE
        PERFORM pg_catalog.pg_notify('receipt_notifications', v_id::text);
    END IF;
    RETURN v_id;
END $$;
