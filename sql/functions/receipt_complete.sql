-- Write the outcomes of many jobs in one call (one transaction). Each element of p_results:
--   {"id", "lease_token", "outcome": "verified" | "rejected" | "retry" | "config_error",
--    "reason", "error", "apple_status", "environment", "result": {…}, "candidates": [purchase…],
--    "cancelled": [purchase…], "retry_in_seconds", "max_attempts", "app_transaction": {…}}
-- A job whose lease is no longer this worker's (rescued, finished elsewhere) is skipped and reported 'lost'.
-- Returns one row per element, in order: the job's state (verified, rejected, retry, dead or lost), its reason,
-- and for a verified job the credit key of the purchase credited.
--
-- In this order (docs/architecture.md, rule 7): (1) the guard: one UPDATE for every job whose lease is still this
-- worker's (retry outcomes out of attempts become dead letters in the same UPDATE); a verified job's result names
-- its first candidate as credited; (2) revocations; (3) the verified jobs credited by receipt_credit(), and the
-- result of each job that was credited with another candidate, or with none, or whose period the ledger computed
-- (a non-renewing subscription's expires_date_ms), rewritten: a candidate Apple is known to have revoked is passed
-- over there (the job `refunded` when every one is); a verified app transaction (an "app_transaction" and no
-- candidates, kind app_transaction) recorded by receipt_app_transaction_credit() instead. All of it is one
-- transaction.
--
-- The planner settings below keep the plans on key lookups, the batch being the outer side of nested loops. Left to
-- itself the planner (which takes the batch for 100 rows, and may know little of the tables) can read every
-- running job through receipt_jobs_running and hash-join them with the batch, loop over the running jobs and scan
-- the batch for each, or keep a plan made while the ledger was nearly empty that scans a table per row: per call,
-- as many row visits as calls in flight, or as rows in the ledger. (A plan that still needs a disabled node carries
-- its penalty cost, which would start JIT compilation on every call: off too.)
-- receipt_worker.notify_done = 'by_caller' makes the row trigger stand aside: the jobs this function finishes are
-- announced from one statement (see sql/triggers/receipt_jobs_notify_done.sql). It is set with set_config() for the
-- function's own run, not with a SET clause: PostgreSQL 15 lets only a superuser create a function whose SET clause
-- names a custom parameter, and the schema's owner need not be one.
CREATE OR REPLACE FUNCTION receipt_complete(p_results jsonb)
RETURNS TABLE (job_id bigint, state text, reason text, credit_key text)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_material = off
SET jit = off
AS $$
DECLARE
    v_notify   text := pg_catalog.current_setting('receipt_worker.notify_done', true);
    v_ords     integer[];
    v_ids      bigint[];
    v_states   text[];
    v_envs     text[];
    v_written  jsonb;
    v_verified receipt_credit_request[];
    v_credits  jsonb;
    v_apps     integer[];
    v_app      record;
BEGIN
    -- The revocation lock shared before any ledger row or chain is locked (receipt_credit() takes it for the
    -- verified jobs in step 3, while step 2 locks the ledger rows a receipt shows cancelled, and step 4 chains): a
    -- REFUND applied at the same moment takes it exclusively, then the same rows, so both in one order.
    IF EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(p_results) AS e(p)
               WHERE e.p->>'outcome' = 'verified'
                  OR pg_catalog.jsonb_array_length(CASE WHEN pg_catalog.jsonb_typeof(e.p->'cancelled') = 'array'
                                                        THEN e.p->'cancelled' ELSE '[]' END) > 0) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(1380667990, 0);
    END IF;
    PERFORM pg_catalog.set_config('receipt_worker.notify_done', 'by_caller', true);
    -- (1) The guard: only the lease holder may write, and only once.
    WITH input AS (
        SELECT e.ord::integer AS ord, e.p, (e.p->>'id')::bigint AS id, e.p->>'outcome' AS outcome,
               e.p->>'outcome' IN ('verified', 'rejected') AS final,
               CASE WHEN e.p->>'outcome' = 'verified' THEN e.p->'candidates'->0 END AS candidate
        FROM jsonb_array_elements(p_results) WITH ORDINALITY AS e(p, ord)
    ), keyed AS (
        SELECT i.*,
               receipt_credit_key(p.kind, i.candidate->>'transaction_id', i.candidate->>'original_transaction_id',
                                  i.candidate->>'web_order_line_item_id') AS credit_key
        FROM input i
        LEFT JOIN receipt_products p ON p.product_id = i.candidate->>'product_id'
    ), written AS (
        UPDATE receipt_jobs j
        SET state = CASE
                        WHEN k.outcome = 'verified' THEN 'verified'
                        WHEN k.outcome = 'rejected' THEN 'rejected'
                        WHEN k.outcome = 'retry'
                             AND j.attempts >= coalesce(j.max_attempts, (k.p->>'max_attempts')::integer, 2147483647)
                            THEN 'dead'
                        ELSE 'retry' END,
            attempts = CASE WHEN k.outcome = 'config_error' THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
            reason = CASE
                         WHEN k.outcome = 'rejected' THEN k.p->>'reason'
                         WHEN k.outcome = 'retry'
                              AND j.attempts >= coalesce(j.max_attempts, (k.p->>'max_attempts')::integer, 2147483647)
                             THEN 'retries_exhausted'
                         END,
            last_error = CASE WHEN k.outcome = 'verified' THEN NULL ELSE k.p->>'error' END,
            apple_status = coalesce((k.p->>'apple_status')::integer, j.apple_status),
            environment = coalesce(k.p->>'environment', j.environment),
            result = CASE
                         WHEN k.candidate IS NOT NULL THEN
                             coalesce(k.p->'result', '{}')
                             || jsonb_build_object('credited', k.candidate, 'credit_key', k.credit_key)
                         WHEN k.final THEN k.p->'result'
                         ELSE j.result END,
            run_at = CASE WHEN k.final THEN j.run_at
                          ELSE now() + make_interval(secs => coalesce((k.p->>'retry_in_seconds')::double precision, 0))
                     END,
            finished_at = CASE
                              WHEN k.final THEN now()
                              WHEN k.outcome = 'retry'
                                   AND j.attempts >= coalesce(j.max_attempts, (k.p->>'max_attempts')::integer,
                                                              2147483647)
                                  THEN now()
                              END,
            locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM keyed k
        -- The lease holder's token, and only while the job is running: written as one condition so the planner
        -- cannot pick receipt_jobs_running to find the rows.
        WHERE j.id = k.id AND j.lease_token = CASE WHEN j.state = 'running' THEN (k.p->>'lease_token')::uuid END
        RETURNING k.ord, j.id, j.state, j.reason, j.bundle_id, j.order_id, j.user_id, k.p->>'environment' AS env,
                  k.p->'candidates' AS candidates, k.p ? 'app_transaction' AS app
    )
    SELECT coalesce(array_agg(w.ord ORDER BY w.ord), '{}'), coalesce(array_agg(w.id ORDER BY w.ord), '{}'),
           coalesce(array_agg(w.state ORDER BY w.ord), '{}'), coalesce(array_agg(w.env ORDER BY w.ord), '{}'),
           coalesce(jsonb_object_agg(w.ord::text, jsonb_build_array(w.id, w.state, w.reason)), '{}'),
           coalesce(array_agg(ROW(w.ord, w.id, w.bundle_id, w.order_id, w.user_id, w.env, w.candidates, 0,
                                  false)::receipt_credit_request ORDER BY w.ord)
                        FILTER (WHERE w.state = 'verified' AND NOT w.app), '{}'),
           coalesce(array_agg(w.ord ORDER BY w.ord) FILTER (WHERE w.state = 'verified' AND w.app), '{}')
    INTO v_ords, v_ids, v_states, v_envs, v_written, v_verified, v_apps
    FROM written w;

    PERFORM pg_notify('receipt_jobs_done', w.id::text)
    FROM unnest(v_ids, v_states) WITH ORDINALITY AS w(id, state, n)
    WHERE w.state IN ('verified', 'rejected', 'dead')
    ORDER BY w.n;

    -- (2) Purchases the receipt now shows cancelled: revoke their credits.
    PERFORM receipt_revoke(w.env, p_results->(w.ord - 1)->'cancelled', w.id)
    FROM unnest(v_ords, v_envs, v_ids) AS w(ord, env, id)
    WHERE jsonb_typeof(p_results->(w.ord - 1)->'cancelled') = 'array'
      AND jsonb_array_length(p_results->(w.ord - 1)->'cancelled') > 0;

    -- (3) Credit the verified jobs. A job credited with its first candidate keeps the result written in (1).
    WITH credit AS (
        SELECT * FROM receipt_credit(v_verified)
    ), rewritten AS (
        UPDATE receipt_jobs j
        SET state = c.state,
            reason = c.reason,
            last_error = CASE c.reason
                             WHEN 'owned_by_other_user' THEN 'the purchase belongs to another user'
                             WHEN 'already_credited' THEN 'every matching purchase is already credited to another order'
                             WHEN 'refunded' THEN 'Apple revoked this purchase (a refund or the end of Family '
                                                  'Sharing, in a notification applied here): the copy sent predates it'
                         END,
            result = CASE
                         WHEN c.state = 'rejected' THEN
                             (coalesce(j.result, '{}') - 'credited' - 'credit_key')
                             || jsonb_build_object('reason', c.reason)
                         WHEN c.candidate_index IS NULL THEN
                             coalesce(j.result, '{}')
                             || jsonb_build_object('credited', c.credited, 'credit_key', c.credit_key,
                                                   'detail', 'this order was credited before')
                         ELSE coalesce(j.result, '{}') || jsonb_build_object('credited', c.credited,
                                                                             'credit_key', c.credit_key)
                     END
        FROM credit c
        -- Also a first candidate that the ledger gave an expiry of its own (a non-renewing subscription's period).
        WHERE j.id = c.job_id AND (c.candidate_index IS DISTINCT FROM 0 OR c.credited IS NOT NULL)
    )
    -- v_credits: per position, [state, reason, credit key, the credited purchase's product] (the candidate credited,
    -- or the ledger's earlier credit of the order).
    SELECT coalesce(jsonb_object_agg(c.ord::text, jsonb_build_array(
               c.state, c.reason, c.credit_key,
               coalesce(c.credited, p_results->(c.ord - 1)->'candidates'->c.candidate_index)->>'product_id')), '{}')
    INTO v_credits
    FROM credit c;

    -- (3b) Verified app transactions (kind app_transaction): one record per appTransactionId, ever.
    FOR v_app IN
        SELECT a.ord, c.state, c.reason, c.credit_key
        FROM pg_catalog.unnest(v_apps) AS a(ord)
        CROSS JOIN LATERAL receipt_app_transaction_credit((v_written->(a.ord::text)->>0)::bigint,
                                                          p_results->(a.ord - 1)->'app_transaction') c
        ORDER BY a.ord
    LOOP
        v_credits := v_credits || pg_catalog.jsonb_build_object(v_app.ord::text, pg_catalog.jsonb_build_array(
                         v_app.state, v_app.reason, v_app.credit_key, NULL));
    END LOOP;

    -- (4) Auto-renewable purchases credited: their chains' subscriptions (receipt_subscription_credited()).
    -- The credits of auto-renewable products first, by the product of the purchase credited (the subquery, which
    -- OFFSET 0 keeps apart, is planned on its own: left to itself the planner looked up every verdict's job and
    -- ledger row before the product, whatever its kind). A verified job's credit is a row of its own order, found
    -- through the order's index: the environment is compared with IS NOT DISTINCT FROM (never NULL here) so that no
    -- index on environment can serve it. A plan made while the ledger was empty otherwise walked
    -- receipt_transactions_transaction over the whole environment for every verdict (it looked as cheap as the unique
    -- key): per batch, as many row visits as rows in the ledger.
    PERFORM receipt_subscription_credited(t.id)
    FROM (SELECT c.ord, c.v->>2 AS credit_key, p.product_id
          FROM jsonb_each(v_credits) AS c(ord, v)
          JOIN receipt_products p ON p.product_id = c.v->>3
          WHERE c.v->>0 = 'verified' AND p.kind = 'auto_renewable'
          OFFSET 0) c
    JOIN receipt_jobs j ON j.id = (v_written->(c.ord)->>0)::bigint
    JOIN receipt_transactions t ON t.bundle_id = j.bundle_id AND t.order_id = j.order_id
        AND t.credit_key = c.credit_key AND t.environment IS NOT DISTINCT FROM j.environment
        AND t.product_id = c.product_id
    -- The chains' locks in one order (receipt_subscription_credited() locks environment and original transaction
    -- id), so that two batches written side by side cannot each hold a chain the other waits for.
    ORDER BY t.environment, coalesce(nullif(t.original_transaction_id, ''), t.transaction_id);

    PERFORM pg_catalog.set_config('receipt_worker.notify_done', coalesce(v_notify, ''), true);
    -- One row per element, the written and credited ones found through maps by position (joins of the batch with
    -- itself would be nested loops under this function's settings, quadratic in the batch).
    RETURN QUERY
    SELECT coalesce((m.w->>0)::bigint, (e.p->>'id')::bigint),
           CASE WHEN m.w IS NULL THEN 'lost' ELSE coalesce(m.c->>0, m.w->>1) END,
           CASE WHEN m.c IS NOT NULL THEN m.c->>1 ELSE m.w->>2 END,
           m.c->>2
    FROM jsonb_array_elements(p_results) WITH ORDINALITY AS e(p, ord)
    CROSS JOIN LATERAL (SELECT v_written->(e.ord::text) AS w, v_credits->(e.ord::text) AS c) m
    ORDER BY e.ord;
END $$;
