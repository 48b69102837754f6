-- Deleted jobs leave their ledger rows with job_id NULL (the ledger is never pruned): what ON DELETE SET NULL did
-- before migration 010, in one statement per DELETE (job_id only ever changes to NULL after insert:
-- receipt_transactions_guard).
-- SECURITY DEFINER: the roles that delete jobs (retention, operators) need no right to update the ledger.
CREATE OR REPLACE FUNCTION receipt_jobs_unlink() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- = ANY of an array, so the rows are found through the job_id index (a join with the transition table, which has
    -- no statistics, may be planned as a scan of the whole ledger).
    UPDATE receipt_transactions t SET job_id = NULL
    WHERE t.job_id = ANY (ARRAY(SELECT d.id FROM deleted_jobs d));
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER receipt_jobs_unlink AFTER DELETE ON receipt_jobs
    REFERENCING OLD TABLE AS deleted_jobs FOR EACH STATEMENT EXECUTE FUNCTION receipt_jobs_unlink();
