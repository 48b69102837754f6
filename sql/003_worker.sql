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
    WITH renewed AS (
        UPDATE receipt_jobs j
        SET lease_until = now() + make_interval(secs => p_lease_seconds)
        FROM unnest(p_ids, p_tokens) AS held(id, token)
        WHERE j.id = held.id AND j.lease_token = held.token AND j.state = 'running' AND j.locked_by = p_worker
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
CREATE FUNCTION receipt_credit(p jsonb, p_job receipt_jobs)
RETURNS TABLE (state text, reason text, credit_key text)
LANGUAGE plpgsql AS $$
DECLARE
    v_env        text := p->>'environment';
    v_candidate  jsonb;
    v_key        text;
    v_original   text;
    v_existing   record;
    v_owner      text;
    v_saw_owner  boolean := false;
    v_credited   jsonb;
BEGIN
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
            SELECT t.bundle_id, t.order_id INTO v_existing
            FROM receipt_transactions t WHERE t.environment = v_env AND t.credit_key = v_key;
            IF FOUND THEN
                IF v_existing.bundle_id = p_job.bundle_id AND v_existing.order_id = p_job.order_id THEN
                    v_credited := v_candidate;
                    EXIT attempt;
                END IF;
                EXIT attempt;                         -- already credited to another order: next candidate
            END IF;

            SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
            WHERE o.environment = v_env AND o.original_transaction_id = v_original;
            IF v_owner IS DISTINCT FROM p_job.user_id THEN
                v_saw_owner := true;
                EXIT attempt;                         -- this purchase chain belongs to another user
            END IF;

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
            -- Another worker credited this key a moment ago: look again at who holds it.
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
        result = j.result - 'credited'
    WHERE j.id = p_job.id
    RETURNING j.state, j.reason INTO state, reason;
    credit_key := NULL;
    RETURN NEXT;
END $$;

-- Write the outcomes of many jobs in one call (one transaction). Each element of p_results:
--   {"id", "lease_token", "outcome": "verified" | "rejected" | "retry" | "config_error",
--    "reason", "error", "apple_status", "environment", "result": {…}, "candidates": [purchase…],
--    "cancelled": [purchase…], "retry_in_seconds", "max_attempts"}
-- A job whose lease is no longer this worker's (rescued, finished elsewhere) is skipped and reported 'lost'.
CREATE FUNCTION receipt_complete(p_results jsonb)
RETURNS TABLE (job_id bigint, state text, reason text, credit_key text)
LANGUAGE plpgsql AS $$
DECLARE
    p        jsonb;
    v_job    receipt_jobs;
    v_final  boolean;
    v_dead   boolean;
BEGIN
    FOR p IN SELECT value FROM jsonb_array_elements(p_results) LOOP
        job_id := (p->>'id')::bigint;
        credit_key := NULL;
        v_final := p->>'outcome' IN ('verified', 'rejected');

        -- The guard: only the lease holder may write, and only once.
        UPDATE receipt_jobs j
        SET state = CASE p->>'outcome'
                        WHEN 'verified' THEN 'verified'
                        WHEN 'rejected' THEN 'rejected'
                        ELSE 'retry' END,
            attempts = CASE WHEN p->>'outcome' = 'config_error' THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
            reason = CASE WHEN p->>'outcome' = 'rejected' THEN p->>'reason' ELSE NULL END,
            last_error = CASE WHEN p->>'outcome' = 'verified' THEN NULL ELSE p->>'error' END,
            apple_status = coalesce((p->>'apple_status')::integer, j.apple_status),
            environment = coalesce(p->>'environment', j.environment),
            result = CASE WHEN v_final THEN p->'result' ELSE j.result END,
            run_at = CASE WHEN v_final THEN j.run_at
                          ELSE now() + make_interval(secs => coalesce((p->>'retry_in_seconds')::double precision, 0))
                     END,
            finished_at = CASE WHEN v_final THEN now() ELSE NULL END,
            locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
        WHERE j.id = job_id AND j.state = 'running' AND j.lease_token = (p->>'lease_token')::uuid
        RETURNING j.* INTO v_job;

        IF NOT FOUND THEN
            state := 'lost';
            reason := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        PERFORM receipt_revoke(p->>'environment', p->'cancelled');

        IF p->>'outcome' = 'verified' THEN
            SELECT c.state, c.reason, c.credit_key INTO state, reason, credit_key FROM receipt_credit(p, v_job) c;
        ELSIF p->>'outcome' IN ('retry', 'config_error') THEN
            -- Out of attempts: a dead letter, kept for operators with the last error.
            v_dead := p->>'outcome' = 'retry'
                      AND v_job.attempts >= coalesce(v_job.max_attempts, (p->>'max_attempts')::integer, 2147483647);
            IF v_dead THEN
                UPDATE receipt_jobs j SET state = 'dead', reason = 'retries_exhausted', finished_at = now()
                WHERE j.id = v_job.id;
                state := 'dead';
                reason := 'retries_exhausted';
            ELSE
                state := 'retry';
                reason := NULL;
            END IF;
        ELSE
            state := v_job.state;
            reason := v_job.reason;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

INSERT INTO receipt_schema_migrations (version) VALUES ('003_worker') ON CONFLICT DO NOTHING;
