-- The enqueue rules shared by enqueue_receipt() and enqueue_transaction(), which check their input and call this
-- (as the functions' owner: it needs no grant of its own). p_caller names the public function in errors.
--
-- Idempotent per (bundle_id, order_id) while that order's job is queued, running, retry or verified: the same call
-- returns the same job, whatever kind of input it carries; an expected order (expect_purchase()) still waiting takes
-- the input the app sends for it and is verified from it at once. A new job is made only after a rejected or dead one.
-- The same open order with a different user or product raises SQLSTATE RW409 (message starts with order_conflict).
-- Input that cannot be verified at all (p_problem is set) is recorded at once as rejected / malformed_input, without
-- the input (its hash is kept), so the API layer hears of it like any other verdict.
-- Runs as the owner (from the SECURITY DEFINER callers), with the same pinned search_path: built-ins are named with
-- pg_catalog., so no overload in another schema can stand in for one.
CREATE OR REPLACE FUNCTION receipt_enqueue(
    p_caller            text,
    p_kind              text,
    p_receipt_data      text,
    p_signed            text,
    p_transaction_id    text,
    p_order_id          text,
    p_user_id           text,
    p_product_id        text,
    p_bundle_id         text,
    p_order_created_at  timestamptz,
    p_app_account_token uuid,
    p_problem           text
) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_bundle   text := p_bundle_id;
    v_input    text := coalesce(p_receipt_data, p_signed);
    v_id       bigint;
    v_existing record;
    v_apps     bigint;
BEGIN
    IF coalesce(p_order_id, '') = '' OR coalesce(p_user_id, '') = '' OR coalesce(p_product_id, '') = '' THEN
        RAISE EXCEPTION '%: order_id, user_id and product_id are required', p_caller
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- order_id and bundle_id are in a unique index, whose entries PostgreSQL limits to about 2.7 kB.
    IF pg_catalog.octet_length(p_order_id) > 1000 OR pg_catalog.octet_length(v_bundle) > 1000 THEN
        RAISE EXCEPTION '%: order_id and bundle_id may be at most 1000 bytes long (order_id is % bytes)',
                        p_caller, pg_catalog.octet_length(p_order_id)
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    -- apple:<transactionId> names the orders the service makes for purchases no order named (issue 37).
    IF p_order_id LIKE 'apple:%' THEN
        RAISE EXCEPTION '%: order ids beginning with "apple:" are the service''s own (order %)', p_caller, p_order_id
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'give the order your own id; apple:<transactionId> names an order Apple''s word made';
    END IF;
    IF v_bundle IS NULL THEN
        SELECT pg_catalog.count(*), pg_catalog.min(a.bundle_id) INTO v_apps, v_bundle FROM receipt_apps a;
        IF v_apps <> 1 THEN
            RAISE EXCEPTION '%: bundle_id is required (% apps are configured)', p_caller, v_apps
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'pass bundle_id, or configure exactly one app in APPLE_BUNDLE_IDS and run receipt-worker migrate';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM receipt_apps a WHERE a.bundle_id = v_bundle) THEN
        RAISE EXCEPTION '%: unknown bundle_id "%"', p_caller, v_bundle
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'add it to APPLE_BUNDLE_IDS and run receipt-worker migrate, or fix the caller';
    END IF;

    IF p_problem IS NOT NULL THEN
        INSERT INTO receipt_jobs AS j (state, kind, bundle_id, order_id, user_id, product_id, transaction_id,
                                       order_created_at, app_account_token, receipt_hash, receipt_bytes, reason,
                                       last_error, finished_at)
        VALUES ('rejected', p_kind, v_bundle, p_order_id, p_user_id, p_product_id, p_transaction_id,
                p_order_created_at, p_app_account_token,
                CASE WHEN v_input IS NULL THEN NULL
                     ELSE pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(v_input, 'UTF8')), 'hex') END,
                pg_catalog.octet_length(v_input), 'malformed_input', p_problem, pg_catalog.now())
        RETURNING j.id INTO v_id;
        RETURN v_id;
    END IF;

    LOOP
        INSERT INTO receipt_jobs AS j (kind, bundle_id, order_id, user_id, product_id, transaction_id,
                                       order_created_at, app_account_token, receipt_data, signed_transaction)
        VALUES (p_kind, v_bundle, p_order_id, p_user_id, p_product_id, nullif(p_transaction_id, ''),
                p_order_created_at, p_app_account_token, p_receipt_data, p_signed)
        ON CONFLICT (bundle_id, order_id) WHERE state IN ('queued', 'running', 'retry', 'verified') DO NOTHING
        RETURNING j.id INTO v_id;
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;

        SELECT j.id, j.user_id, j.product_id, j.kind, j.state INTO v_existing
        FROM receipt_jobs j
        WHERE j.bundle_id = v_bundle AND j.order_id = p_order_id
          AND j.state IN ('queued', 'running', 'retry', 'verified');
        IF FOUND THEN
            IF v_existing.user_id <> p_user_id OR v_existing.product_id <> p_product_id THEN
                RAISE EXCEPTION 'order_conflict: order % of app % is already enqueued (job %) for another user or product',
                                p_order_id, v_bundle, v_existing.id
                    USING ERRCODE = 'RW409';
            END IF;
            IF v_existing.kind = 'expected' AND v_existing.state = 'queued' AND p_kind <> 'expected' THEN
                -- The app's copy of an expected order's purchase (issue 37): the order is verified from it now.
                UPDATE receipt_jobs j
                SET kind = p_kind, receipt_data = p_receipt_data, signed_transaction = p_signed,
                    transaction_id = nullif(p_transaction_id, ''),
                    order_created_at = coalesce(j.order_created_at, p_order_created_at),
                    app_account_token = coalesce(p_app_account_token, j.app_account_token),
                    receipt_hash = pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(v_input, 'UTF8')), 'hex'),
                    receipt_bytes = pg_catalog.octet_length(v_input), run_at = pg_catalog.now(),
                    updated_at = pg_catalog.now()
                WHERE j.id = v_existing.id AND j.state = 'queued' AND j.kind = 'expected';
                IF NOT FOUND THEN
                    -- Its deadline passed (or its purchase came) between the two statements: look again.
                    CONTINUE;
                END IF;
                PERFORM pg_catalog.pg_notify('receipt_jobs', '');
            END IF;
            RETURN v_existing.id;
        END IF;
        -- The open job became rejected or dead between the two statements: insert again.
    END LOOP;
END $$;
