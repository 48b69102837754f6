-- The scheduler: retries back to the queue, expired leases rescued, exhausted jobs to the dead letters.
-- Safe to run from many processes at once (each row is taken with SKIP LOCKED and re-checked).

-- One pass. p_max_attempts applies to jobs whose max_attempts is NULL. Returns what it moved.
CREATE FUNCTION receipt_sweep(p_max_attempts integer, p_limit integer DEFAULT 1000)
RETURNS TABLE (promoted integer, rescued integer, dead integer)
LANGUAGE plpgsql AS $$
BEGIN
    -- Jobs whose worker stopped renewing the lease (killed, machine lost): back to the queue, or dead when that
    -- claim was their last attempt.
    WITH expired AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.state = 'running' AND j.lease_until < now()
        ORDER BY j.lease_until
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE receipt_jobs j
        SET state = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'dead' ELSE 'queued' END,
            reason = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'retries_exhausted' END,
            finished_at = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN now() END,
            last_error = format('lease expired: worker %s stopped answering (rescue %s)', j.locked_by, j.rescues + 1)
                         || coalesce('; before: ' || j.last_error, ''),
            rescues = j.rescues + 1, run_at = now(), locked_by = NULL, lease_token = NULL, lease_until = NULL,
            updated_at = now()
        FROM expired WHERE j.id = expired.id AND j.state = 'running' AND j.lease_until < now()
        RETURNING j.state
    )
    SELECT count(*) FILTER (WHERE moved.state = 'queued'), count(*) FILTER (WHERE moved.state = 'dead')
    INTO rescued, dead FROM moved;

    -- Retries whose time has come. Jobs out of attempts go to the dead letters with their last error.
    WITH due AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.state = 'retry' AND j.run_at <= now()
        ORDER BY j.run_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE receipt_jobs j
        SET state = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'dead' ELSE 'queued' END,
            reason = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'retries_exhausted' END,
            finished_at = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN now() END,
            updated_at = now()
        FROM due WHERE j.id = due.id AND j.state = 'retry'
        RETURNING j.state
    )
    SELECT count(*) FILTER (WHERE moved.state = 'queued'), dead + count(*) FILTER (WHERE moved.state = 'dead')
    INTO promoted, dead FROM moved;

    IF promoted + rescued > 0 THEN
        PERFORM pg_notify('receipt_jobs', '');      -- claimable again: wake the workers
    END IF;
    RETURN NEXT;
END $$;

-- Retention: clear the receipts of jobs finished more than p_clear_after ago (the hash stays), and delete
-- verified and rejected jobs finished more than p_delete_after ago whose verdict was delivered. Dead jobs and
-- undelivered verdicts are never deleted. Works in batches of p_batch rows so no lock is held for long; call until it returns 0.
-- The ledger is never pruned (its job_id becomes NULL).
CREATE FUNCTION receipt_prune(p_clear_after interval, p_delete_after interval, p_batch integer DEFAULT 5000)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_cleared integer;
    v_deleted integer;
BEGIN
    WITH batch AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.finished_at < now() - p_clear_after AND j.receipt_data IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    UPDATE receipt_jobs j SET receipt_data = NULL FROM batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_cleared = ROW_COUNT;

    WITH batch AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.finished_at < now() - p_delete_after AND j.state IN ('verified', 'rejected')
          AND j.delivered_at IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM receipt_jobs j USING batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_cleared + v_deleted;
END $$;

INSERT INTO receipt_schema_migrations (version) VALUES ('004_scheduler') ON CONFLICT DO NOTHING;
