-- The workers call only the functions in this folder, so the queue's rules live in one place.
--
-- Claim up to p_limit runnable jobs for p_worker with a fresh lease. One statement; SKIP LOCKED lets any number
-- of workers claim side by side. Each claim counts as an attempt (a receipt that kills its worker cannot loop
-- forever); outcomes that must not cost an attempt give it back in receipt_complete().
--
-- The claimed ids are collected first and the jobs then updated by primary key. Joined to the claimable subquery
-- instead, the UPDATE was planned for a tenth of the claimable jobs (LIMIT takes a parameter, whose value the plan
-- does not know): with many jobs queued, a hash join over a sequential scan of the whole table, on every claim. In
-- PL/pgSQL, so the plan is made once per connection, not on every call.
CREATE OR REPLACE FUNCTION receipt_claim(p_worker text, p_limit integer, p_lease_seconds double precision)
RETURNS TABLE (
    id bigint, lease_token uuid, bundle_id text, order_id text, user_id text, product_id text,
    transaction_id text, order_created_at_ms bigint, created_at_ms bigint, receipt_data text, receipt_hash text,
    attempts integer, kind text, signed_transaction text, app_account_token uuid
)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE receipt_jobs j
    SET state = 'running', attempts = j.attempts + 1, locked_by = p_worker, lease_token = gen_random_uuid(),
        lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
    WHERE j.id = ANY (ARRAY(
        SELECT c.id FROM receipt_jobs c
        -- (An expected order, issue 37, is queued until its deadline but nothing for a worker: receipt_sweep().)
        WHERE c.state = 'queued' AND c.run_at <= now() AND c.kind <> 'expected'
        ORDER BY c.run_at, c.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING j.id, j.lease_token, j.bundle_id, j.order_id, j.user_id, j.product_id, j.transaction_id,
              (extract(epoch FROM j.order_created_at) * 1000)::bigint,
              (extract(epoch FROM j.created_at) * 1000)::bigint,
              j.receipt_data, j.receipt_hash, j.attempts, j.kind, j.signed_transaction, j.app_account_token;
END $$;
