-- A wake-up hint for the API layer when a job reaches a final state (NOTIFY receipt_jobs_done, the job id). The
-- durable path is delivered_at.
--
-- receipt_complete() announces the jobs it finishes itself, from one statement instead of one trigger call per
-- job: while it runs, the transaction-local setting receipt_worker.notify_done is 'by_caller' and the update
-- trigger stands aside. Every other UPDATE that finishes a job (the scheduler's dead letters, an operator's UPDATE)
-- is announced here.
CREATE OR REPLACE FUNCTION receipt_jobs_notify_done() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_notify('receipt_jobs_done', NEW.id::text);
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER receipt_jobs_notify_done_update AFTER UPDATE OF finished_at ON receipt_jobs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL
                       AND current_setting('receipt_worker.notify_done', true) IS DISTINCT FROM 'by_caller')
    EXECUTE FUNCTION receipt_jobs_notify_done();
CREATE OR REPLACE TRIGGER receipt_jobs_notify_done_insert AFTER INSERT ON receipt_jobs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL)
    EXECUTE FUNCTION receipt_jobs_notify_done();
