-- The workers' statements. Workers call only these functions, so the queue's rules live here, in one place.

-- Claim up to p_limit runnable jobs for p_worker with a fresh lease. One statement; SKIP LOCKED lets any number
-- of workers claim side by side. Each claim counts as an attempt (a receipt that kills its worker cannot loop
-- forever); outcomes that must not cost an attempt give it back in receipt_complete().
CREATE FUNCTION receipt_claim(p_worker text, p_limit integer, p_lease_seconds double precision)
RETURNS TABLE (
    id bigint, lease_token uuid, bundle_id text, order_id text, user_id text, product_id text,
    transaction_id text, order_created_at_ms bigint, created_at_ms bigint, receipt_data text, receipt_hash text,
    attempts integer
)
LANGUAGE sql AS $$
    UPDATE receipt_jobs j
    SET state = 'running', attempts = j.attempts + 1, locked_by = p_worker, lease_token = gen_random_uuid(),
        lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now()
    FROM (
        SELECT c.id FROM receipt_jobs c
        WHERE c.state = 'queued' AND c.run_at <= now()
        ORDER BY c.run_at, c.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ) claimable
    WHERE j.id = claimable.id
    RETURNING j.id, j.lease_token, j.bundle_id, j.order_id, j.user_id, j.product_id, j.transaction_id,
              (extract(epoch FROM j.order_created_at) * 1000)::bigint,
              (extract(epoch FROM j.created_at) * 1000)::bigint,
              j.receipt_data, j.receipt_hash, j.attempts
$$;

-- Extend the leases of jobs whose Apple calls are still in flight. Returns how many leases were renewed.
CREATE FUNCTION receipt_renew_leases(p_worker text, p_ids bigint[], p_tokens uuid[], p_lease_seconds double precision)
RETURNS integer
LANGUAGE sql AS $$
    -- SKIP LOCKED: a job whose outcome is being written right now (its row locked by the write transaction) needs
    -- no renewal, and waiting for that transaction would hold up every other lease in the batch.
    WITH held AS (
        SELECT j.id FROM receipt_jobs j
        JOIN unnest(p_ids, p_tokens) AS h(id, token) ON j.id = h.id AND j.lease_token = h.token
        WHERE j.state = 'running' AND j.locked_by = p_worker
        FOR UPDATE OF j SKIP LOCKED
    ), renewed AS (
        UPDATE receipt_jobs j
        SET lease_until = now() + make_interval(secs => p_lease_seconds)
        FROM held WHERE j.id = held.id
        RETURNING 1
    )
    SELECT count(*)::integer FROM renewed
$$;

-- Give claimed jobs back (graceful shutdown): claimable again at once, and the attempt is not counted.
CREATE FUNCTION receipt_release(p_ids bigint[], p_tokens uuid[]) RETURNS integer
LANGUAGE sql AS $$
    WITH released AS (
        UPDATE receipt_jobs j
        SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(), locked_by = NULL,
            lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM unnest(p_ids, p_tokens) AS held(id, token)
        WHERE j.id = held.id AND j.lease_token = held.token AND j.state = 'running'
        RETURNING 1
    ), woken AS (
        SELECT pg_notify('receipt_jobs', '') WHERE EXISTS (SELECT 1 FROM released)
    )
    SELECT count(*)::integer FROM released, (SELECT count(*) FROM woken) w
$$;

-- The credit key of a purchase (rule 5): per transaction by default; per purchase chain for non-consumables;
-- per subscription period for auto-renewables.
CREATE FUNCTION receipt_credit_key(p_product_id text, p_transaction_id text, p_original_transaction_id text,
                                   p_web_order_line_item_id text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE (SELECT p.kind FROM receipt_products p WHERE p.product_id = p_product_id)
        WHEN 'non_consumable' THEN coalesce(nullif(p_original_transaction_id, ''), p_transaction_id)
        WHEN 'auto_renewable' THEN coalesce('wol:' || nullif(p_web_order_line_item_id, ''), p_transaction_id)
        ELSE p_transaction_id
    END
$$;

-- Mark credited purchases that the receipt now shows cancelled as revoked, and announce each revocation.
CREATE FUNCTION receipt_revoke(p_environment text, p_cancelled jsonb) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_row record;
    v_count integer := 0;
BEGIN
    IF p_cancelled IS NULL OR jsonb_array_length(p_cancelled) = 0 THEN
        RETURN 0;
    END IF;
    FOR v_row IN
        UPDATE receipt_transactions t
        SET revoked_at = coalesce(to_timestamp((c->>'cancellation_date_ms')::bigint / 1000.0), now()),
            revocation_reason = coalesce('cancelled by Apple (reason ' || (c->>'cancellation_reason') || ')',
                                         'cancelled by Apple')
        FROM jsonb_array_elements(p_cancelled) AS c
        WHERE t.environment = p_environment AND t.transaction_id = c->>'transaction_id' AND t.revoked_at IS NULL
        RETURNING t.id, t.transaction_id, t.order_id, t.user_id, t.bundle_id, t.product_id
    LOOP
        PERFORM pg_notify('receipt_revocations', json_build_object(
            'ledger_id', v_row.id, 'transaction_id', v_row.transaction_id, 'order_id', v_row.order_id,
            'user_id', v_row.user_id, 'bundle_id', v_row.bundle_id, 'product_id', v_row.product_id,
            'environment', p_environment)::text);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END $$;

-- Credit one verified job (rule 7): the guarded job UPDATE first (a lost lease writes nothing), then the ledger.
-- Candidates are tried in order; the first that neither another order nor another user holds is credited.
-- A ledger row for this same order counts as credited (a re-verification is idempotent).
-- The ledger's unique key decides by itself (INSERT … ON CONFLICT uses its index whatever the planner thinks of a
-- young, unanalysed table); who holds a key is looked up only when it is taken or the chain is another user's.
CREATE FUNCTION receipt_credit(p jsonb, p_job receipt_jobs)
RETURNS TABLE (state text, reason text, credit_key text)
LANGUAGE plpgsql AS $$
DECLARE
    v_prior      record;
    v_env        text := p->>'environment';
    v_candidate  jsonb;
    v_key        text;
    v_original   text;
    v_existing   record;
    v_owner      text;
    v_saw_owner  boolean := false;
    v_credited   jsonb;
BEGIN
    -- An order pays for one purchase. If the ledger already holds one for this order (an earlier job, perhaps
    -- since deleted by retention), the order is verified with it and nothing else is credited to it.
    SELECT t.credit_key, jsonb_strip_nulls(jsonb_build_object(
               'transaction_id', t.transaction_id, 'original_transaction_id', t.original_transaction_id,
               'web_order_line_item_id', t.web_order_line_item_id, 'product_id', t.product_id,
               'quantity', t.quantity, 'purchase_date_ms', (extract(epoch FROM t.purchase_date) * 1000)::bigint,
               'expires_date_ms', (extract(epoch FROM t.expires_date) * 1000)::bigint)) AS purchase
    INTO v_prior
    FROM receipt_transactions t
    WHERE t.bundle_id = p_job.bundle_id AND t.order_id = p_job.order_id
    ORDER BY t.id LIMIT 1;
    IF FOUND THEN
        UPDATE receipt_jobs j
        SET result = coalesce(j.result, '{}')
                     || jsonb_build_object('credited', v_prior.purchase, 'credit_key', v_prior.credit_key,
                                           'detail', 'this order was credited before')
        WHERE j.id = p_job.id;
        RETURN QUERY SELECT 'verified'::text, NULL::text, v_prior.credit_key;
        RETURN;
    END IF;
    FOR v_candidate IN SELECT value FROM jsonb_array_elements(p->'candidates') LOOP
        v_key := receipt_credit_key(v_candidate->>'product_id', v_candidate->>'transaction_id',
                                    v_candidate->>'original_transaction_id',
                                    v_candidate->>'web_order_line_item_id');
        v_original := coalesce(nullif(v_candidate->>'original_transaction_id', ''), v_candidate->>'transaction_id');

        -- The chain's owner row serialises concurrent credits of one purchase chain.
        INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
        VALUES (v_env, v_original, p_job.user_id) ON CONFLICT DO NOTHING;

        <<attempt>>
        LOOP
            SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
            WHERE o.environment = v_env AND o.original_transaction_id = v_original;
            IF v_owner = p_job.user_id THEN
                INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                                  web_order_line_item_id, product_id, quantity, bundle_id, order_id,
                                                  user_id, job_id, purchase_date, expires_date)
                VALUES (v_env, v_key, v_candidate->>'transaction_id', v_original,
                        nullif(v_candidate->>'web_order_line_item_id', ''), v_candidate->>'product_id',
                        coalesce((v_candidate->>'quantity')::integer, 1), p_job.bundle_id, p_job.order_id,
                        p_job.user_id, p_job.id,
                        to_timestamp((v_candidate->>'purchase_date_ms')::bigint / 1000.0),
                        to_timestamp((v_candidate->>'expires_date_ms')::bigint / 1000.0))
                ON CONFLICT DO NOTHING;
                IF FOUND THEN
                    v_credited := v_candidate;
                    EXIT attempt;
                END IF;
            END IF;

            -- The key is taken, or the chain belongs to another user: the key's holder decides first.
            SELECT t.bundle_id, t.order_id INTO v_existing
            FROM receipt_transactions t WHERE t.environment = v_env AND t.credit_key = v_key;
            IF FOUND THEN
                IF v_existing.bundle_id = p_job.bundle_id AND v_existing.order_id = p_job.order_id THEN
                    v_credited := v_candidate;
                END IF;
                EXIT attempt;                         -- already credited to another order: next candidate
            END IF;
            IF v_owner IS DISTINCT FROM p_job.user_id THEN
                v_saw_owner := true;
                EXIT attempt;                         -- this purchase chain belongs to another user
            END IF;
            -- The insert met a row that is gone again (its transaction rolled back): try again.
        END LOOP;

        IF v_credited IS NOT NULL THEN
            UPDATE receipt_jobs j
            SET result = coalesce(j.result, '{}') || jsonb_build_object('credited', v_credited, 'credit_key', v_key)
            WHERE j.id = p_job.id;
            RETURN QUERY SELECT 'verified'::text, NULL::text, v_key;
            RETURN;
        END IF;
    END LOOP;

    -- Nothing left to credit.
    UPDATE receipt_jobs j
    SET state = 'rejected',
        reason = CASE WHEN v_saw_owner THEN 'owned_by_other_user' ELSE 'already_credited' END,
        last_error = CASE WHEN v_saw_owner THEN 'the purchase belongs to another user'
                          ELSE 'every matching purchase is already credited to another order' END,
        result = (coalesce(j.result, '{}') - 'credited' - 'credit_key')
                 || jsonb_build_object('reason', CASE WHEN v_saw_owner THEN 'owned_by_other_user'
                                                      ELSE 'already_credited' END)
    WHERE j.id = p_job.id
    RETURNING j.state, j.reason INTO state, reason;
    credit_key := NULL;
    RETURN NEXT;
END $$;

-- One job written by receipt_complete()'s guarded UPDATE, carried to its later steps.
CREATE TYPE receipt_written_job AS (
    ord        integer,  -- position in p_results (1-based)
    id         bigint,
    state      text,     -- after the guard: verified, rejected, retry or dead
    reason     text,
    bundle_id  text,
    order_id   text,
    user_id    text,
    env        text,
    candidate  jsonb,    -- a verified job's first candidate
    original   text,     -- its purchase chain
    credit_key text      -- its credit key
);

-- Write the outcomes of many jobs in one call (one transaction). Each element of p_results:
--   {"id", "lease_token", "outcome": "verified" | "rejected" | "retry" | "config_error",
--    "reason", "error", "apple_status", "environment", "result": {…}, "candidates": [purchase…],
--    "cancelled": [purchase…], "retry_in_seconds", "max_attempts"}
-- A job whose lease is no longer this worker's (rescued, finished elsewhere) is skipped and reported 'lost'.
-- Returns one row per element, in order.
--
-- Set-based, in this order: (1) the guard: one UPDATE for every job whose lease is still this worker's (retry
-- outcomes out of attempts become dead letters in the same UPDATE); (2) revocations; (3) each verified job's first
-- candidate credited where its chain is (or becomes) the job's user's and its key is free: owner rows, then ledger
-- rows, each one statement; (4) every other verified job through receipt_credit(), one by one, all candidates.
-- The result of a verified job names its first candidate as credited from (1) on; receipt_credit() replaces or
-- removes that when another candidate, or none, is credited. All of it is one transaction.
CREATE FUNCTION receipt_complete(p_results jsonb)
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
BEGIN
    -- (1) The guard: only the lease holder may write, and only once.
    WITH input AS (
        SELECT e.ord::integer AS ord, e.p, (e.p->>'id')::bigint AS id, e.p->>'outcome' AS outcome,
               e.p->>'outcome' IN ('verified', 'rejected') AS final,
               CASE WHEN e.p->>'outcome' = 'verified' THEN e.p->'candidates'->0 END AS candidate
        FROM jsonb_array_elements(p_results) WITH ORDINALITY AS e(p, ord)
    ), keyed AS (
        SELECT i.*,
               coalesce(nullif(i.candidate->>'original_transaction_id', ''), i.candidate->>'transaction_id')
                   AS original,
               CASE WHEN i.candidate IS NOT NULL THEN
                   receipt_credit_key(i.candidate->>'product_id', i.candidate->>'transaction_id',
                                      i.candidate->>'original_transaction_id',
                                      i.candidate->>'web_order_line_item_id')
               END AS credit_key
        FROM input i
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
        WHERE j.id = k.id AND j.state = 'running' AND j.lease_token = (k.p->>'lease_token')::uuid
        RETURNING k.ord, j.id, j.state, j.reason, j.bundle_id, j.order_id, j.user_id, k.p->>'environment',
                  k.candidate, k.original, k.credit_key
    )
    SELECT coalesce(array_agg(w::receipt_written_job ORDER BY w.ord), '{}') INTO v_written FROM written w;

    -- (2) Purchases the receipt now shows cancelled: revoke their credits.
    PERFORM receipt_revoke(w.env, p_results->(w.ord - 1)->'cancelled')
    FROM unnest(v_written) w
    WHERE jsonb_typeof(p_results->(w.ord - 1)->'cancelled') = 'array'
      AND jsonb_array_length(p_results->(w.ord - 1)->'cancelled') > 0;

    -- (3) First candidates: the chain's owner row (it serialises concurrent credits of one chain), then the
    -- ledger row where the chain is this job's user's. A key already taken is left to (4).
    INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
    SELECT w.env, w.original, w.user_id
    FROM unnest(v_written) w
    WHERE w.state = 'verified' AND w.candidate IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM receipt_transactions t WHERE t.bundle_id = w.bundle_id AND t.order_id = w.order_id)
    ORDER BY w.env, w.original
    ON CONFLICT DO NOTHING;

    WITH credited AS (
        INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                          web_order_line_item_id, product_id, quantity, bundle_id, order_id,
                                          user_id, job_id, purchase_date, expires_date)
        SELECT w.env, w.credit_key, w.candidate->>'transaction_id', w.original,
               nullif(w.candidate->>'web_order_line_item_id', ''), w.candidate->>'product_id',
               coalesce((w.candidate->>'quantity')::integer, 1), w.bundle_id, w.order_id, w.user_id, w.id,
               to_timestamp((w.candidate->>'purchase_date_ms')::bigint / 1000.0),
               to_timestamp((w.candidate->>'expires_date_ms')::bigint / 1000.0)
        FROM unnest(v_written) w
        WHERE w.state = 'verified' AND w.candidate IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM receipt_transactions t
                          WHERE t.bundle_id = w.bundle_id AND t.order_id = w.order_id)
          AND (SELECT o.user_id FROM receipt_purchase_owners o
               WHERE o.environment = w.env AND o.original_transaction_id = w.original) = w.user_id
        ORDER BY w.env, w.credit_key, w.ord
        ON CONFLICT DO NOTHING
        RETURNING receipt_transactions.job_id
    )
    SELECT coalesce(array_agg(c.job_id), '{}') INTO v_credited FROM credited c;

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

INSERT INTO receipt_schema_migrations (version) VALUES ('003_worker') ON CONFLICT DO NOTHING;
