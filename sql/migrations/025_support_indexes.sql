-- `receipt-worker explain` (issue 37): support looks a purchase up by the customer's order id, user id or transaction
-- id. The purchase chains' notifications and unclaimed purchases are indexed here:
--   receipt_notifications_chain   the notifications of a purchase chain (a notification's row is written with its
--                                 chain once, when applied: one entry each)
--   receipt_unclaimed_chain       the purchases of a chain kept unclaimed
-- receipt_jobs is not: every state change of a job is a non-HOT update (the queue's partial indexes name `state`), so
-- each index on it costs an entry per claim and per verdict; three of them (order, user, transaction) cost 15% more
-- PostgreSQL CPU and WAL per verification in `bench`. explain reads receipt_jobs through the ledger's indexes where it
-- can and scans it otherwise (docs/operations.md, explain). On large tables, build these first with
-- CREATE INDEX CONCURRENTLY IF NOT EXISTS (each statement on its own); migrate then finds them.
CREATE INDEX IF NOT EXISTS receipt_notifications_chain ON receipt_notifications (original_transaction_id)
    WHERE original_transaction_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS receipt_unclaimed_chain ON receipt_unclaimed (original_transaction_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('025_support_indexes') ON CONFLICT DO NOTHING;
