-- Views and functions for operators.  psql -c 'table receipt_jobs_stuck'

-- Count and oldest age per state.
CREATE VIEW receipt_queue_summary AS
SELECT s.state,
       count(j.id)                                   AS jobs,
       min(j.created_at)                             AS oldest_created_at,
       date_trunc('second', now() - min(j.created_at)) AS oldest_age,
       min(j.run_at) FILTER (WHERE j.state IN ('queued', 'retry')) AS next_run_at,
       count(j.id) FILTER (WHERE j.finished_at IS NOT NULL AND j.delivered_at IS NULL) AS undelivered
FROM (VALUES (1, 'queued'), (2, 'running'), (3, 'retry'), (4, 'verified'), (5, 'rejected'), (6, 'dead'))
         AS s(position, state)
LEFT JOIN receipt_jobs j ON j.state = s.state
GROUP BY s.position, s.state
ORDER BY s.position;

-- Jobs an operator should look at: which job, which order, how long, how many tries, what Apple said last.
CREATE VIEW receipt_jobs_stuck AS
SELECT j.id,
       CASE
           WHEN j.state = 'running' AND j.lease_until < now() THEN 'lease expired'
           WHEN j.state = 'queued' AND j.run_at < now() - interval '5 minutes' THEN 'queued too long'
           WHEN j.state = 'retry' AND j.attempts >= 5 THEN 'retrying many times'
           WHEN j.state = 'dead' THEN 'dead'
       END                                           AS problem,
       j.state,
       j.bundle_id,
       j.order_id,
       j.user_id,
       j.product_id,
       date_trunc('second', now() - j.created_at)   AS age,
       j.attempts,
       j.max_attempts,
       j.rescues,
       j.apple_status,
       j.last_error,
       j.run_at,
       j.locked_by,
       j.lease_until,
       j.created_at
FROM receipt_jobs j
WHERE (j.state = 'running' AND j.lease_until < now())
   OR (j.state = 'queued' AND j.run_at < now() - interval '5 minutes')
   OR (j.state = 'retry' AND j.attempts >= 5)
   OR j.state = 'dead'
ORDER BY j.created_at;

-- The last 24 hours of rejections, dead letters and pending retries, grouped by reason and Apple status.
CREATE VIEW receipt_failures AS
SELECT j.state,
       coalesce(j.reason, '-')                       AS reason,
       j.apple_status,
       count(*)                                      AS jobs,
       max(j.updated_at)                             AS last_seen,
       max(j.id)                                     AS latest_id,
       (array_agg(j.last_error ORDER BY j.updated_at DESC))[1] AS latest_error
FROM receipt_jobs j
WHERE j.state IN ('rejected', 'dead', 'retry') AND j.updated_at > now() - interval '24 hours'
GROUP BY j.state, j.reason, j.apple_status
ORDER BY jobs DESC, last_seen DESC;

-- Put one dead, rejected or retrying job back in the queue now, with fresh attempts. Recorded in
-- receipt_admin_log (actor = the session's login role). SECURITY DEFINER: operators need EXECUTE, not write
-- rights on receipt_jobs. Raises when the job is running or verified, or when its order already has another open job.
CREATE FUNCTION receipt_requeue(p_job_id bigint, p_note text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    v_job receipt_jobs;
BEGIN
    SELECT * INTO v_job FROM receipt_jobs j WHERE j.id = p_job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'receipt_requeue: no job %', p_job_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_job.state NOT IN ('dead', 'rejected', 'retry') THEN
        RAISE EXCEPTION 'receipt_requeue: job % is %; only dead, rejected or retry jobs can be requeued',
                        p_job_id, v_job.state USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_job.receipt_data IS NULL THEN
        RAISE EXCEPTION 'receipt_requeue: job % has no receipt any more (malformed, or cleared by retention)',
                        p_job_id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_job.state <> 'retry' AND EXISTS (
        SELECT 1 FROM receipt_jobs o
        WHERE o.bundle_id = v_job.bundle_id AND o.order_id = v_job.order_id AND o.id <> v_job.id
          AND o.state IN ('queued', 'running', 'retry', 'verified')) THEN
        RAISE EXCEPTION 'receipt_requeue: order % already has another open or verified job', v_job.order_id
            USING ERRCODE = 'unique_violation';
    END IF;
    UPDATE receipt_jobs j
    SET state = 'queued', attempts = 0, run_at = now(), reason = NULL, finished_at = NULL, delivered_at = NULL,
        updated_at = now()
    WHERE j.id = p_job_id;
    PERFORM pg_notify('receipt_jobs', '');
    INSERT INTO receipt_admin_log (action, job_id, detail)
    VALUES ('requeue', p_job_id, format('was %s (%s, %s attempts): %s%s', v_job.state, coalesce(v_job.reason, '-'),
                                        v_job.attempts, coalesce(v_job.last_error, '-'),
                                        coalesce('; note: ' || p_note, '')));
    RETURN true;
END $$;

-- Requeue every dead job (after an outage or a configuration fix). Returns how many were requeued; jobs whose
-- order already has another open job are left dead.
CREATE FUNCTION receipt_requeue_dead(p_note text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    v_id bigint;
    v_count integer := 0;
BEGIN
    FOR v_id IN SELECT j.id FROM receipt_jobs j WHERE j.state = 'dead' AND j.receipt_data IS NOT NULL ORDER BY j.id
    LOOP
        BEGIN
            PERFORM receipt_requeue(v_id, p_note);
            v_count := v_count + 1;
        EXCEPTION WHEN unique_violation THEN
            NULL;
        END;
    END LOOP;
    RETURN v_count;
END $$;

INSERT INTO receipt_schema_migrations (version) VALUES ('005_operations') ON CONFLICT DO NOTHING;
