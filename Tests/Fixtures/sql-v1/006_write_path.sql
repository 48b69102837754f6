-- Faster claims and write-back: the same rules and guarantees as 003_worker.sql, with less work per job.
--
-- receipt_complete(): each job looked up by primary key with the plans pinned to that (see the settings in the
-- function); each first candidate's credit key by a join on receipt_products instead of a receipt_credit_key() call
-- per row; owner rows and ledger rows in one statement; the jobs it finishes announced (NOTIFY receipt_jobs_done,
-- one per job, as before) from one statement instead of one row-trigger call per job. The row trigger stays for
-- every other UPDATE that finishes a job (the scheduler's dead letters, an operator's UPDATE); it stands aside only
-- while the transaction-local setting receipt_worker.notify_done is 'by_caller', which receipt_complete() sets
-- around its guarded UPDATE and clears right after.
-- receipt_claim(): the claimed jobs updated by primary key, in PL/pgSQL (see the comment above it).

DROP TRIGGER receipt_jobs_notify_done_update ON receipt_jobs;
CREATE TRIGGER receipt_jobs_notify_done_update AFTER UPDATE OF finished_at ON receipt_jobs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL
                       AND current_setting('receipt_worker.notify_done', true) IS DISTINCT FROM 'by_caller')
    EXECUTE FUNCTION receipt_jobs_notify_done();

-- Write the outcomes of many jobs in one call (one transaction): see 003_worker.sql for the contract.
CREATE OR REPLACE FUNCTION receipt_complete(p_results jsonb)
RETURNS TABLE (job_id bigint, state text, reason text, credit_key text)
LANGUAGE plpgsql AS $$
DECLARE
    v_written  receipt_written_job[];
    v_credited bigint[];
    v_slow     receipt_written_job;
    v_job      receipt_jobs;
    v_ords     integer[] := '{}';
    v_states   text[] := '{}';
    v_reasons  text[] := '{}';
    v_keys     text[] := '{}';
    v_seqscan   text := current_setting('enable_seqscan');
    v_hashjoin  text := current_setting('enable_hashjoin');
    v_mergejoin text := current_setting('enable_mergejoin');
    v_material  text := current_setting('enable_material');
    v_jit       text := current_setting('jit');
BEGIN
    -- (1) The guard: only the lease holder may write, and only once. The jobs it finishes are announced below, in
    -- one statement, instead of by the row trigger.
    PERFORM set_config('receipt_worker.notify_done', 'by_caller', true);
    -- Steps (1) to (3) look every row up by key, the batch being the outer side of nested loops: the plans are
    -- pinned to that. Left to itself the planner (which takes the batch for 100 rows, and may know little of the
    -- tables) can read every running job through receipt_jobs_running and hash-join them with the batch, loop over
    -- the running jobs and scan the batch for each, or keep a plan made while the ledger was nearly empty that
    -- scans a table per row: per call, as many row visits as calls in flight, or as rows in the ledger.
    -- (A plan that still needs a disabled node carries its penalty cost, which would start JIT compilation on
    -- every call: off too.)
    PERFORM set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
            set_config('enable_mergejoin', 'off', true), set_config('enable_material', 'off', true),
            set_config('jit', 'off', true);
    WITH input AS (
        SELECT e.ord::integer AS ord, e.p, (e.p->>'id')::bigint AS id, e.p->>'outcome' AS outcome,
               e.p->>'outcome' IN ('verified', 'rejected') AS final,
               CASE WHEN e.p->>'outcome' = 'verified' THEN e.p->'candidates'->0 END AS candidate
        FROM jsonb_array_elements(p_results) WITH ORDINALITY AS e(p, ord)
    ), keyed AS (
        SELECT i.*,
               coalesce(nullif(i.candidate->>'original_transaction_id', ''), i.candidate->>'transaction_id')
                   AS original,
               -- receipt_credit_key(), written out: a call per row would run its catalog lookup as a query of
               -- its own each time.
               CASE WHEN i.candidate IS NOT NULL THEN
                   CASE p.kind
                       WHEN 'non_consumable' THEN coalesce(nullif(i.candidate->>'original_transaction_id', ''),
                                                           i.candidate->>'transaction_id')
                       WHEN 'auto_renewable' THEN coalesce('wol:' || nullif(i.candidate->>'web_order_line_item_id', ''),
                                                           i.candidate->>'transaction_id')
                       ELSE i.candidate->>'transaction_id'
                   END
               END AS credit_key
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
        -- cannot pick receipt_jobs_running to find the rows (see the settings above).
        WHERE j.id = k.id AND j.lease_token = CASE WHEN j.state = 'running' THEN (k.p->>'lease_token')::uuid END
        RETURNING k.ord, j.id, j.state, j.reason, j.bundle_id, j.order_id, j.user_id, k.p->>'environment',
                  k.candidate, k.original, k.credit_key
    )
    SELECT coalesce(array_agg(w::receipt_written_job ORDER BY w.ord), '{}') INTO v_written FROM written w;
    PERFORM set_config('receipt_worker.notify_done', '', true);
    PERFORM pg_notify('receipt_jobs_done', w.id::text)
    FROM unnest(v_written) w WHERE w.state IN ('verified', 'rejected', 'dead') ORDER BY w.ord;

    -- (2) Purchases the receipt now shows cancelled: revoke their credits.
    PERFORM receipt_revoke(w.env, p_results->(w.ord - 1)->'cancelled')
    FROM unnest(v_written) w
    WHERE jsonb_typeof(p_results->(w.ord - 1)->'cancelled') = 'array'
      AND jsonb_array_length(p_results->(w.ord - 1)->'cancelled') > 0;

    -- (3) First candidates, in one statement: the chain's owner row (it serialises concurrent credits of one
    -- chain), then the ledger row where the chain is this job's user's: its owner row was inserted just now
    -- (`owned`), or was there before. Anything else (a key already taken, an owner this statement cannot see yet)
    -- is left to (4).
    WITH fresh AS (
        SELECT w.* FROM unnest(v_written) w
        WHERE w.state = 'verified' AND w.candidate IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM receipt_transactions t
                          WHERE t.bundle_id = w.bundle_id AND t.order_id = w.order_id)
    ), owned AS (
        INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
        SELECT f.env, f.original, f.user_id FROM fresh f
        ORDER BY f.env, f.original
        ON CONFLICT DO NOTHING
        RETURNING environment, original_transaction_id, user_id
    ), credited AS (
        INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                          web_order_line_item_id, product_id, quantity, bundle_id, order_id,
                                          user_id, job_id, purchase_date, expires_date)
        SELECT f.env, f.credit_key, f.candidate->>'transaction_id', f.original,
               nullif(f.candidate->>'web_order_line_item_id', ''), f.candidate->>'product_id',
               coalesce((f.candidate->>'quantity')::integer, 1), f.bundle_id, f.order_id, f.user_id, f.id,
               to_timestamp((f.candidate->>'purchase_date_ms')::bigint / 1000.0::double precision),
               to_timestamp((f.candidate->>'expires_date_ms')::bigint / 1000.0::double precision)
        FROM fresh f
        WHERE (f.env, f.original, f.user_id) IN (SELECT o.environment, o.original_transaction_id, o.user_id
                                                  FROM owned o)
           OR (SELECT o.user_id FROM receipt_purchase_owners o
               WHERE o.environment = f.env AND o.original_transaction_id = f.original) = f.user_id
        ORDER BY f.env, f.credit_key, f.ord
        ON CONFLICT DO NOTHING
        RETURNING receipt_transactions.job_id
    )
    SELECT coalesce(array_agg(c.job_id), '{}') INTO v_credited FROM credited c;

    PERFORM set_config('enable_seqscan', v_seqscan, true), set_config('enable_hashjoin', v_hashjoin, true),
            set_config('enable_mergejoin', v_mergejoin, true), set_config('enable_material', v_material, true),
            set_config('jit', v_jit, true);

    -- (4) Every other verified job: all its candidates, in order, with the holder and owner checks.
    FOR v_slow IN
        SELECT * FROM unnest(v_written) w WHERE w.state = 'verified' AND NOT (w.id = ANY (v_credited)) ORDER BY w.ord
    LOOP
        SELECT * INTO v_job FROM receipt_jobs j WHERE j.id = v_slow.id;
        v_ords := v_ords || v_slow.ord;
        SELECT v_states || c.state, v_reasons || c.reason, v_keys || c.credit_key
        INTO v_states, v_reasons, v_keys
        FROM receipt_credit(p_results->(v_slow.ord - 1), v_job) c;
    END LOOP;

    RETURN QUERY
    SELECT coalesce(w.id, (e.p->>'id')::bigint),
           CASE WHEN w.id IS NULL THEN 'lost' WHEN s.ord IS NOT NULL THEN s.state ELSE w.state END,
           CASE WHEN s.ord IS NOT NULL THEN s.reason ELSE w.reason END,
           CASE WHEN s.ord IS NOT NULL THEN s.credit_key WHEN w.state = 'verified' THEN w.credit_key END
    FROM jsonb_array_elements(p_results) WITH ORDINALITY AS e(p, ord)
    LEFT JOIN unnest(v_written) w ON w.ord = e.ord
    LEFT JOIN unnest(v_ords, v_states, v_reasons, v_keys) AS s(ord, state, reason, credit_key) ON s.ord = e.ord
    ORDER BY e.ord;
END $$;


-- Claim, as in 003_worker.sql, with the claimed ids collected first and the jobs then updated by primary key.
-- Joined to the claimable subquery instead, the UPDATE was planned for a tenth of the claimable jobs (LIMIT takes a
-- parameter, whose value the plan does not know): with many jobs queued, a hash join over a sequential scan of the
-- whole table, on every claim. In PL/pgSQL, so the plan is made once per connection, not on every call.
CREATE OR REPLACE FUNCTION receipt_claim(p_worker text, p_limit integer, p_lease_seconds double precision)
RETURNS TABLE (
    id bigint, lease_token uuid, bundle_id text, order_id text, user_id text, product_id text,
    transaction_id text, order_created_at_ms bigint, created_at_ms bigint, receipt_data text, receipt_hash text,
    attempts integer
)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE receipt_jobs j
    SET state = 'running', attempts = j.attempts + 1, locked_by = p_worker, lease_token = gen_random_uuid(),
        lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
    WHERE j.id = ANY (ARRAY(
        SELECT c.id FROM receipt_jobs c
        WHERE c.state = 'queued' AND c.run_at <= now()
        ORDER BY c.run_at, c.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING j.id, j.lease_token, j.bundle_id, j.order_id, j.user_id, j.product_id, j.transaction_id,
              (extract(epoch FROM j.order_created_at) * 1000)::bigint,
              (extract(epoch FROM j.created_at) * 1000)::bigint,
              j.receipt_data, j.receipt_hash, j.attempts;
END $$;

INSERT INTO receipt_schema_migrations (version) VALUES ('006_write_path') ON CONFLICT DO NOTHING;
