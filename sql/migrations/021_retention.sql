-- Retention of refund requests and consumption records (receipt_prune's p_refund_requests_after), through indexes
-- that hold only what is left for it to do, as 011_retention_indexes does for jobs, events and notifications.
-- IF NOT EXISTS: on a large table they may be built beforehand with CREATE INDEX CONCURRENTLY; this file keeps them.
--
-- Refund requests no longer pending (answered, skipped or failed), by Apple's deadline to answer them: the entry is
-- added when the request is settled, deleting takes it out. Pending requests are never deleted.
CREATE INDEX IF NOT EXISTS receipt_refund_requests_settled ON receipt_refund_requests (respond_by)
    WHERE state <> 'pending';
-- Consumption records by their last update: retention deletes those left unchanged for the refund requests' period
-- once no refund request of their transaction is kept.
CREATE INDEX IF NOT EXISTS receipt_consumption_updated ON receipt_consumption (updated_at);
-- A transaction's refund requests whatever their environment (a consumption record carries none), for that test.
CREATE INDEX IF NOT EXISTS receipt_refund_requests_transaction_id ON receipt_refund_requests (transaction_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('021_retention') ON CONFLICT DO NOTHING;
