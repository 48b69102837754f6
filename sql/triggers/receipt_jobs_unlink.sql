-- Deleted jobs leave their ledger rows with job_id NULL (the ledger is never pruned): what ON DELETE SET NULL did
-- before migration 010. One statement per DELETE, finding the rows through the order they credited (a ledger row's
-- bundle and order are its job's, and its job_id is only ever set to NULL after insert: receipt_transactions_guard).
-- SECURITY DEFINER: the roles that delete jobs (retention, operators) need no right to update the ledger.
CREATE OR REPLACE FUNCTION receipt_jobs_unlink() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE receipt_transactions t SET job_id = NULL
    FROM deleted_jobs d
    WHERE t.bundle_id = d.bundle_id AND t.order_id = d.order_id AND t.job_id = d.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER receipt_jobs_unlink AFTER DELETE ON receipt_jobs
    REFERENCING OLD TABLE AS deleted_jobs FOR EACH STATEMENT EXECUTE FUNCTION receipt_jobs_unlink();
