-- Issue 40, views an operator opens on tables that have grown (`bench --prefill`): receipt_jobs_stuck and
-- receipt_failures read every job at 1,000,000 finished jobs (320 and 360 ms, then seconds at 10,000,000); with these
-- they read only the jobs they show (under a millisecond).
--   receipt_jobs_dead     dead letters, for receipt_jobs_stuck (its other problems have their partial indexes)
--   receipt_jobs_failed   rejected, dead and retrying jobs by their last change, for receipt_failures (24 hours)
-- Partial: a verified job never has an entry, so a verification costs nothing more (receipt_jobs' updates are
-- non-HOT; an index a row does not match is not written). A rejection or a retry writes one entry.
-- On large tables, build these first with CREATE INDEX CONCURRENTLY IF NOT EXISTS (each statement on its own);
-- migrate then finds them (docs/operations.md, upgrades).
CREATE INDEX IF NOT EXISTS receipt_jobs_dead ON receipt_jobs (created_at) WHERE state = 'dead';
CREATE INDEX IF NOT EXISTS receipt_jobs_failed ON receipt_jobs (updated_at) WHERE state IN ('rejected', 'dead', 'retry');

-- And receipt_unclaimed's credited purchases by when they were credited, for receipt_prune() (a small table: one
-- row per purchase Apple announced that nobody could be credited for at first).
CREATE INDEX IF NOT EXISTS receipt_unclaimed_claimed ON receipt_unclaimed (claimed_at) WHERE claimed_at IS NOT NULL;

INSERT INTO receipt_schema_migrations (version) VALUES ('031_operator_view_indexes') ON CONFLICT DO NOTHING;
