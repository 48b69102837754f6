-- `receipt-worker explain` (issue 37): support looks a purchase up by the customer's order id, user id or transaction
-- id. Without these, each lookup would read the whole of receipt_jobs (rejected and dead jobs included, which no
-- other index holds) and of receipt_notifications.
--   receipt_jobs_order        a customer's order by its id, in any app and state
--   receipt_jobs_user         a customer's orders, newest first
--   receipt_jobs_transaction  the orders that named a transaction
--   receipt_notifications_chain   the notifications of a purchase chain
--   receipt_unclaimed_chain   the purchases of a chain kept unclaimed
-- user_id and order_id never change once a job is made, so a job's updates stay HOT as before (transaction_id is
-- filled in at most once, when a purchase Apple announced completes the job). On large tables, build them first with
-- CREATE INDEX CONCURRENTLY IF NOT EXISTS (each statement on its own); migrate then finds them.
CREATE INDEX IF NOT EXISTS receipt_jobs_order ON receipt_jobs (order_id);
CREATE INDEX IF NOT EXISTS receipt_jobs_user ON receipt_jobs (user_id, created_at);
CREATE INDEX IF NOT EXISTS receipt_jobs_transaction ON receipt_jobs (transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS receipt_notifications_chain ON receipt_notifications (original_transaction_id)
    WHERE original_transaction_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS receipt_unclaimed_chain ON receipt_unclaimed (original_transaction_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('025_support_indexes') ON CONFLICT DO NOTHING;
