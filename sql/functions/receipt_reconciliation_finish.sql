-- Records what became of a report day `work` claimed (receipt_reconciliation_claim()), if p_worker still holds it:
-- done with its run (p_run_id), or waiting p_retry_seconds for another attempt (Apple's report not ready yet, or a
-- failure, in p_error). Returns whether the day was still this worker's.
CREATE OR REPLACE FUNCTION receipt_reconciliation_finish(
    p_report_date date, p_worker text, p_run_id bigint, p_error text, p_retry_seconds double precision
) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE receipt_reconciliation_schedule s
    SET state = CASE WHEN p_run_id IS NOT NULL THEN 'done' ELSE 'waiting' END,
        run_id = p_run_id, last_error = pg_catalog.left(p_error, 1000), locked_by = NULL, lease_until = NULL,
        next_attempt_at = CASE WHEN p_run_id IS NULL
                               THEN pg_catalog.now() + pg_catalog.make_interval(secs => p_retry_seconds) END,
        updated_at = pg_catalog.now()
    WHERE s.report_date = p_report_date AND s.state = 'running' AND s.locked_by = p_worker;
    RETURN FOUND;
END $$;
