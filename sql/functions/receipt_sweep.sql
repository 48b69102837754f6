-- The scheduler: retries back to the queue, expired leases rescued, exhausted jobs to the dead letters, expected
-- orders past their deadline rejected not_purchased.
-- Safe to run from many processes at once (each row is taken with SKIP LOCKED and re-checked).
--
-- One pass. p_max_attempts applies to jobs whose max_attempts is NULL. Returns what it moved.
CREATE OR REPLACE FUNCTION receipt_sweep(p_max_attempts integer, p_limit integer DEFAULT 1000)
RETURNS TABLE (promoted integer, rescued integer, dead integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_batch   integer;
    v_expired bigint;
BEGIN
    -- Jobs whose worker stopped renewing the lease (killed, machine lost), and retries whose time has come: back to
    -- the queue, or to the dead letters (with their last error) when they are out of attempts.
    WITH expired AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.state = 'running' AND j.lease_until < now()
        ORDER BY j.lease_until
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), due AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.state = 'retry' AND j.run_at <= now()
        ORDER BY j.run_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), taken AS (
        SELECT e.id, true AS rescue FROM expired e
        UNION ALL
        SELECT d.id, false AS rescue FROM due d
    ), moved AS (
        UPDATE receipt_jobs j
        SET state = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'dead' ELSE 'queued' END,
            reason = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN 'retries_exhausted' END,
            finished_at = CASE WHEN j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN now() END,
            -- A lease that expired on the job's last attempt: the job itself may be what ends its workers (a crash
            -- on its input), so it is set aside rather than handed to the next worker.
            last_error = CASE
                             WHEN t.rescue AND j.attempts >= coalesce(j.max_attempts, p_max_attempts) THEN
                                 format('set aside after %s claims: the worker processing it ended (crash or kill) '
                                        || '%s times, last worker %s', j.attempts, j.rescues + 1, j.locked_by)
                                 || coalesce('; before: ' || j.last_error, '')
                             WHEN t.rescue THEN
                                 format('lease expired: worker %s stopped answering (rescue %s)', j.locked_by,
                                        j.rescues + 1) || coalesce('; before: ' || j.last_error, '')
                             ELSE j.last_error END,
            rescues = j.rescues + t.rescue::integer,
            run_at = CASE WHEN t.rescue THEN now() ELSE j.run_at END,
            locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM taken t
        WHERE j.id = t.id
          AND CASE WHEN t.rescue THEN j.state = 'running' AND j.lease_until < now() ELSE j.state = 'retry' END
        RETURNING j.state, t.rescue
    )
    SELECT count(*) FILTER (WHERE NOT m.rescue AND m.state = 'queued'),
           count(*) FILTER (WHERE m.rescue AND m.state = 'queued'),
           count(*) FILTER (WHERE m.state = 'dead')
    INTO promoted, rescued, dead FROM moved m;

    -- Expected orders (expect_purchase(), issue 37) whose purchase did not come by their deadline: up to ten batches
    -- a pass, so that many deadlines at once do not linger among the workers' claimable rows.
    FOR v_batch IN 1..10 LOOP
        WITH due AS (
            SELECT j.id FROM receipt_jobs j
            WHERE j.state = 'queued' AND j.kind = 'expected' AND j.run_at <= now()
            ORDER BY j.run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE receipt_jobs j
        SET state = 'rejected', reason = 'not_purchased',
            result = jsonb_build_object('reason', 'not_purchased', 'detail', 'no purchase came by the deadline'),
            last_error = format('no purchase of %s with appAccountToken %s was credited to this order by %s',
                                j.product_id, j.app_account_token, j.run_at),
            finished_at = now(), updated_at = now()
        FROM due d
        WHERE j.id = d.id AND j.state = 'queued' AND j.kind = 'expected';
        GET DIAGNOSTICS v_expired = ROW_COUNT;
        EXIT WHEN v_expired < p_limit;
    END LOOP;

    IF promoted + rescued > 0 THEN
        PERFORM pg_notify('receipt_jobs', '');      -- claimable again: wake the workers
    END IF;
    RETURN NEXT;
END $$;
