-- Claims notifications to verify and apply: queued ones, retries that are due, and running ones whose lease expired
-- (their worker died), oldest first; SKIP LOCKED, so workers never wait for each other.
CREATE OR REPLACE FUNCTION receipt_notification_claim(p_worker text, p_limit integer, p_lease_seconds double precision)
RETURNS TABLE (id bigint, lease_token uuid, signed_payload text, attempts integer)
LANGUAGE sql AS $$
    WITH due AS (
        SELECT n.id FROM receipt_notifications n
        WHERE (n.state IN ('queued', 'retry') AND n.run_at <= now())
           OR (n.state = 'running' AND n.lease_until < now())
        ORDER BY n.run_at, n.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    )
    UPDATE receipt_notifications n
    SET state = 'running', attempts = n.attempts + 1, locked_by = p_worker, lease_token = gen_random_uuid(),
        lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
    FROM due
    WHERE n.id = due.id
    RETURNING n.id, n.lease_token, n.signed_payload, n.attempts
$$;
