-- Give claimed jobs back (graceful shutdown): claimable again at once, and the attempt is not counted.
CREATE OR REPLACE FUNCTION receipt_release(p_ids bigint[], p_tokens uuid[]) RETURNS integer
LANGUAGE sql AS $$
    WITH released AS (
        UPDATE receipt_jobs j
        SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(), locked_by = NULL,
            lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM unnest(p_ids, p_tokens) AS held(id, token)
        WHERE j.id = held.id AND j.lease_token = held.token AND j.state = 'running'
        RETURNING 1
    ), woken AS (
        SELECT pg_notify('receipt_jobs', '') WHERE EXISTS (SELECT 1 FROM released)
    )
    SELECT count(*)::integer FROM released, (SELECT count(*) FROM woken) w
$$;
