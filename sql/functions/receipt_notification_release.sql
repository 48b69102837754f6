-- Gives claimed notifications back (a worker stopping with some not yet verified): claimable again at once by
-- another worker, the attempt not counted, and NOTIFY receipt_notifications wakes the workers. One no longer held
-- under that token is left alone. Returns how many were given back.
CREATE OR REPLACE FUNCTION receipt_notification_release(p_ids bigint[], p_lease_tokens uuid[]) RETURNS integer
LANGUAGE sql AS $$
    WITH released AS (
        UPDATE receipt_notifications n
        SET state = 'queued', attempts = greatest(n.attempts - 1, 0), run_at = now(), locked_by = NULL,
            lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM unnest(p_ids, p_lease_tokens) AS held(id, token)
        WHERE n.id = held.id AND n.lease_token = held.token AND n.state = 'running'
        RETURNING 1
    ), woken AS (
        SELECT pg_notify('receipt_notifications', '') WHERE EXISTS (SELECT 1 FROM released)
    )
    SELECT count(*)::integer FROM released, (SELECT count(*) FROM woken) w
$$;
