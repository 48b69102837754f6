-- What retention (receipt_prune: `work`'s RETENTION_* settings, `sweep --delete-…-after-days`) may delete and what it
-- never deletes, per kind of row, with the oldest row it may delete once old enough and that row's age. Each oldest
-- is read from the index retention itself uses, so the view costs a few index reads, not a count of any table
-- (consumption's read walks past the older records a refund request still keeps, as receipt_prune's does).
-- An oldest older than the period in effect (`receipt-worker status` prints both) means retention is not running.
-- minimum_kept: the shortest period receipt_prune accepts for the kind (a longer setting wins).
CREATE OR REPLACE VIEW receipt_retention AS
SELECT k.kind, k.table_name, k.deletes, k.ages_by, k.minimum_kept, k.oldest, pg_catalog.now() - k.oldest AS oldest_age,
       k.never_deleted
FROM (
    SELECT 1 AS position, 'receipts' AS kind, 'receipt_jobs' AS table_name,
           'receipt_data and signed_transaction of finished jobs (the hash stays)' AS deletes,
           'finished_at' AS ages_by, NULL::interval AS minimum_kept,
           (SELECT min(j.finished_at) FROM receipt_jobs j
            WHERE j.finished_at IS NOT NULL AND (j.receipt_data IS NOT NULL OR j.signed_transaction IS NOT NULL))
               AS oldest,
           'receipts of unfinished jobs' AS never_deleted
    UNION ALL
    SELECT 2, 'jobs', 'receipt_jobs', 'verified and rejected jobs whose verdict was delivered', 'finished_at', NULL,
           (SELECT min(j.finished_at) FROM receipt_jobs j
            WHERE j.delivered_at IS NOT NULL AND j.state IN ('verified', 'rejected')),
           'undelivered verdicts, dead and unfinished jobs; the ledger (receipt_transactions) and its history'
    UNION ALL
    SELECT 3, 'events', 'receipt_events', 'delivered events', 'created_at', NULL,
           (SELECT min(e.created_at) FROM receipt_events e WHERE e.delivered_at IS NOT NULL),
           'undelivered events'
    UNION ALL
    SELECT 4, 'notifications', 'receipt_notifications', 'applied, duplicate and rejected notifications',
           'finished_at', interval '180 days',
           (SELECT min(n.finished_at) FROM receipt_notifications n
            WHERE n.state IN ('applied', 'duplicate', 'rejected')),
           'queued, running, retrying and dead notifications'
    UNION ALL
    SELECT 5, 'forgeries', 'receipt_notifications', 'notifications rejected invalid_signature', 'finished_at', NULL,
           (SELECT min(n.finished_at) FROM receipt_notifications n
            WHERE n.state = 'rejected' AND n.reason = 'invalid_signature'),
           NULL
    UNION ALL
    SELECT 6, 'refund requests', 'receipt_refund_requests', 'answered, skipped and failed refund requests',
           'respond_by', interval '180 days',
           (SELECT min(r.respond_by) FROM receipt_refund_requests r WHERE r.state <> 'pending'),
           'pending refund requests'
    UNION ALL
    SELECT 7, 'consumption', 'receipt_consumption', 'consumption records no refund request of their transaction needs',
           'updated_at', interval '180 days',
           -- As receipt_prune: a record a refund request of its transaction still needs is not one it may delete.
           (SELECT c.updated_at FROM receipt_consumption c
            WHERE NOT EXISTS (SELECT FROM receipt_refund_requests r WHERE r.transaction_id = c.transaction_id)
            ORDER BY c.updated_at LIMIT 1),
           'records of a transaction with a refund request kept'
    UNION ALL
    SELECT 8, 'unclaimed purchases', 'receipt_unclaimed', 'purchases kept unclaimed, once credited', 'claimed_at',
           interval '180 days', (SELECT min(u.claimed_at) FROM receipt_unclaimed u WHERE u.claimed_at IS NOT NULL),
           'purchases still waiting for their customer'
    UNION ALL
    SELECT 9, 'consents', 'receipt_customer_consents', 'nothing', 'updated_at', NULL, NULL,
           'every consent (a standing choice the API layer sets)'
    UNION ALL
    SELECT 10, 'account tokens', 'receipt_account_tokens', 'nothing', 'created_at', NULL, NULL,
           'every token (whose purchases Apple announces with it, for good)'
) k
ORDER BY k.position;
