-- Put one dead, rejected or retrying job back in the queue now, with fresh attempts. Recorded in
-- receipt_admin_log (actor = the session's login role). SECURITY DEFINER: operators need EXECUTE, not write
-- rights on receipt_jobs. Raises when the job is running or verified, or when its order already has another open job.
CREATE OR REPLACE FUNCTION receipt_requeue(p_job_id bigint, p_note text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
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
    IF v_job.kind <> 'transaction_id' AND coalesce(v_job.receipt_data, v_job.signed_transaction) IS NULL THEN
        RAISE EXCEPTION 'receipt_requeue: job % has no % any more (malformed, or cleared by retention)',
                        p_job_id, CASE v_job.kind WHEN 'receipt' THEN 'receipt' ELSE 'signed transaction' END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_job.state <> 'retry' AND EXISTS (
        SELECT 1 FROM receipt_jobs o
        WHERE o.bundle_id = v_job.bundle_id AND o.order_id = v_job.order_id AND o.id <> v_job.id
          AND o.state IN ('queued', 'running', 'retry', 'verified')) THEN
        RAISE EXCEPTION 'receipt_requeue: order % already has another open or verified job', v_job.order_id
            USING ERRCODE = 'unique_violation';
    END IF;
    UPDATE receipt_jobs j
    SET state = 'queued', attempts = 0, run_at = pg_catalog.now(), reason = NULL, finished_at = NULL,
        delivered_at = NULL, updated_at = pg_catalog.now()
    WHERE j.id = p_job_id;
    PERFORM pg_catalog.pg_notify('receipt_jobs', '');
    INSERT INTO receipt_admin_log (action, job_id, detail)
    VALUES ('requeue', p_job_id,
            pg_catalog.format('was %s (%s, %s attempts): %s%s', v_job.state, coalesce(v_job.reason, '-'),
                              v_job.attempts, coalesce(v_job.last_error, '-'), coalesce('; note: ' || p_note, '')));
    RETURN true;
END $$;
