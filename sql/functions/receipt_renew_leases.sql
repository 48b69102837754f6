-- Extend the leases of jobs whose Apple calls are still in flight. Returns how many leases were renewed.
CREATE OR REPLACE FUNCTION receipt_renew_leases(p_worker text, p_ids bigint[], p_tokens uuid[], p_lease_seconds double precision)
RETURNS integer
LANGUAGE sql AS $$
    -- SKIP LOCKED: a job whose outcome is being written right now (its row locked by the write transaction) needs
    -- no renewal, and waiting for that transaction would hold up every other lease in the batch.
    WITH held AS (
        SELECT j.id FROM receipt_jobs j
        JOIN unnest(p_ids, p_tokens) AS h(id, token) ON j.id = h.id AND j.lease_token = h.token
        WHERE j.state = 'running' AND j.locked_by = p_worker
        FOR UPDATE OF j SKIP LOCKED
    ), renewed AS (
        UPDATE receipt_jobs j
        SET lease_until = now() + make_interval(secs => p_lease_seconds)
        FROM held WHERE j.id = held.id
        RETURNING 1
    )
    SELECT count(*)::integer FROM renewed
$$;
