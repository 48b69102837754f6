-- Extends the leases of notifications a worker still holds (verifying them can take as long as Apple's OCSP
-- responders), so none is claimed again by another worker while in hand. Returns how many leases were renewed; a
-- notification no longer held under that token (written back, or its lease already taken over) is left alone.
CREATE OR REPLACE FUNCTION receipt_notification_renew_leases(
    p_worker text, p_ids bigint[], p_tokens uuid[], p_lease_seconds double precision
)
RETURNS integer
LANGUAGE sql AS $$
    -- SKIP LOCKED: a notification whose result is being written right now needs no renewal, and waiting for that
    -- transaction would hold up every other lease in the batch.
    WITH held AS (
        SELECT n.id FROM receipt_notifications n
        JOIN unnest(p_ids, p_tokens) AS h(id, token) ON n.id = h.id AND n.lease_token = h.token
        WHERE n.state = 'running' AND n.locked_by = p_worker
        FOR UPDATE OF n SKIP LOCKED
    ), renewed AS (
        UPDATE receipt_notifications n
        SET lease_until = now() + make_interval(secs => p_lease_seconds)
        FROM held WHERE n.id = held.id
        RETURNING 1
    )
    SELECT count(*)::integer FROM renewed
$$;
