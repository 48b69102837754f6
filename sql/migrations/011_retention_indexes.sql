-- Retention (receipt_prune) finds its rows through indexes that hold only what is left for it to do.
-- IF NOT EXISTS: on a large receipt_jobs the two indexes may be built beforehand without blocking writes (README.md,
-- the SQL interface, on migrating); this file then keeps them and drops the old one.
-- receipt_jobs_finished held every finished job, so each call walked, from the oldest on, every job whose receipt was
-- already cleared before reaching one still to clear (with 30-day clearing and 90-day deletion, two months of jobs
-- read on every call), and walked the jobs kept for being undelivered or dead before the ones to delete.
--
-- Receipts still to clear, by when their job finished: the finishing update adds the entry (as it did to
-- receipt_jobs_finished), clearing the receipt takes the job out.
CREATE INDEX IF NOT EXISTS receipt_jobs_retained ON receipt_jobs (finished_at)
    WHERE finished_at IS NOT NULL AND (receipt_data IS NOT NULL OR signed_transaction IS NOT NULL);
-- Jobs retention may delete once old enough: delivered verified and rejected verdicts. The entry is added when the
-- verdict is delivered (mark_verdict_delivered), not when the worker finishes the job; deleting takes it out.
CREATE INDEX IF NOT EXISTS receipt_jobs_deletable ON receipt_jobs (finished_at)
    WHERE delivered_at IS NOT NULL AND state IN ('verified', 'rejected');
DROP INDEX IF EXISTS receipt_jobs_finished;
-- Delivered events, by when they were made (the entry is added by mark_event_delivered), and finished
-- notifications: retention deletes them once old (they were kept forever before).
CREATE INDEX IF NOT EXISTS receipt_events_delivered ON receipt_events (created_at) WHERE delivered_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS receipt_notifications_finished ON receipt_notifications (finished_at)
    WHERE state IN ('applied', 'duplicate', 'rejected');

INSERT INTO receipt_schema_migrations (version) VALUES ('011_retention_indexes') ON CONFLICT DO NOTHING;
