-- Wake the workers: once per statement, however many rows it inserted.
-- Setting (ALTER DATABASE … SET, ALTER ROLE … SET, or SET in a session):
--   receipt_worker.notify  'off' stops NOTIFY receipt_jobs on enqueue (workers then poll)
CREATE OR REPLACE FUNCTION receipt_jobs_notify_enqueued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(pg_catalog.current_setting('receipt_worker.notify', true), '') <> 'off' THEN
        PERFORM pg_catalog.pg_notify('receipt_jobs', '');
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER receipt_jobs_notify_enqueued AFTER INSERT ON receipt_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_jobs_notify_enqueued();
