-- The API layer calls this in the same transaction in which it grants (or refuses) the order.
-- Returns false when the job is unknown, not final, or already delivered.
CREATE OR REPLACE FUNCTION mark_verdict_delivered(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE receipt_jobs j SET delivered_at = pg_catalog.now(), updated_at = pg_catalog.now()
    WHERE j.id = mark_verdict_delivered.job_id AND j.finished_at IS NOT NULL AND j.delivered_at IS NULL;
    RETURN FOUND;
END $$;
