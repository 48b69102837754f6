-- The ledger's link to the job that credited a row (job_id) is kept without a foreign key: the key cost every credit
-- a lookup and a row lock on the job (about a tenth of PostgreSQL's work per verified receipt). The same rule holds
-- through the trigger receipt_jobs_unlink: a job that is deleted (retention) leaves its ledger rows with job_id NULL.
-- Ledger rows are written only by receipt_credit(), with the id of a job it has just updated under its lease. The
-- index on job_id stays: the API layer's delivery loop joins the ledger on it.
ALTER TABLE receipt_transactions DROP CONSTRAINT receipt_transactions_job_id_fkey;

INSERT INTO receipt_schema_migrations (version) VALUES ('010_ledger_job_link') ON CONFLICT DO NOTHING;
