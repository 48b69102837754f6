-- The API layer's interface: enqueue_receipt(), mark_verdict_delivered(), and the triggers behind them.
--
-- Settings (ALTER DATABASE … SET, ALTER ROLE … SET, or SET in a session):
--   receipt_worker.notify             'off' stops NOTIFY receipt_jobs on enqueue (workers then poll)
--   receipt_worker.max_receipt_bytes  the largest receipt accepted (default 1048576)

-- Every new job gets its receipt's hash (logs and retention use it, never the receipt).
CREATE FUNCTION receipt_jobs_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.receipt_data IS NOT NULL THEN
        NEW.receipt_hash := encode(sha256(convert_to(NEW.receipt_data, 'UTF8')), 'hex');
        NEW.receipt_bytes := octet_length(NEW.receipt_data);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER receipt_jobs_before_insert BEFORE INSERT ON receipt_jobs
    FOR EACH ROW EXECUTE FUNCTION receipt_jobs_before_insert();

-- Wake the workers: once per statement, however many rows it inserted.
CREATE FUNCTION receipt_jobs_notify_enqueued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('receipt_worker.notify', true), '') <> 'off' THEN
        PERFORM pg_notify('receipt_jobs', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER receipt_jobs_notify_enqueued AFTER INSERT ON receipt_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_jobs_notify_enqueued();

-- A wake-up hint for the API layer when a job reaches a final state. The durable path is delivered_at.
CREATE FUNCTION receipt_jobs_notify_done() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('receipt_jobs_done', NEW.id::text);
    RETURN NULL;
END $$;

CREATE TRIGGER receipt_jobs_notify_done_update AFTER UPDATE OF finished_at ON receipt_jobs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL)
    EXECUTE FUNCTION receipt_jobs_notify_done();
CREATE TRIGGER receipt_jobs_notify_done_insert AFTER INSERT ON receipt_jobs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL)
    EXECUTE FUNCTION receipt_jobs_notify_done();

-- The ledger is append-only: only the revocation columns may change (once), and job_id may be cleared when
-- retention deletes the job (ON DELETE SET NULL).
CREATE FUNCTION receipt_transactions_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: credited purchases are never deleted'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF (to_jsonb(NEW) - 'revoked_at' - 'revocation_reason' - 'job_id')
       IS DISTINCT FROM (to_jsonb(OLD) - 'revoked_at' - 'revocation_reason' - 'job_id')
       OR (NEW.job_id IS DISTINCT FROM OLD.job_id AND NEW.job_id IS NOT NULL)
       OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at) THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: only revoked_at and revocation_reason may be set'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER receipt_transactions_guard BEFORE UPDATE OR DELETE ON receipt_transactions
    FOR EACH ROW EXECUTE FUNCTION receipt_transactions_guard();
CREATE TRIGGER receipt_transactions_no_truncate BEFORE TRUNCATE ON receipt_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_transactions_guard();

-- Why a receipt cannot be verified at all, or NULL when it looks like base64 of a sensible size.
-- Line breaks and spaces are valid inside base64 (iOS inserts them).
CREATE FUNCTION receipt_input_problem(p_receipt text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    compact text;
    limit_bytes bigint := coalesce(nullif(current_setting('receipt_worker.max_receipt_bytes', true), '')::bigint,
                                   1048576);
BEGIN
    IF p_receipt IS NULL OR btrim(p_receipt, E' \t\r\n') = '' THEN
        RETURN 'receipt_data is empty';
    END IF;
    IF octet_length(p_receipt) > limit_bytes THEN
        RETURN format('receipt_data is %s bytes, over the limit of %s', octet_length(p_receipt), limit_bytes);
    END IF;
    compact := regexp_replace(p_receipt, '[ \t\r\n]', '', 'g');
    IF compact !~ '^[A-Za-z0-9+/]*={0,2}$' OR length(compact) % 4 <> 0 THEN
        RETURN 'receipt_data is not base64';
    END IF;
    RETURN NULL;
END $$;

-- Enqueue a receipt for verification; returns the job id.
-- Idempotent per (bundle_id, order_id) while that order's job is queued, running, retry or verified: the same
-- call returns the same job. A new job is made only after a rejected or dead one. The same open order with a
-- different user or product raises SQLSTATE RW409 (message starts with order_conflict).
-- A receipt that is empty, not base64 or too large is recorded at once as rejected / malformed_input.
-- SECURITY DEFINER (with the search_path fixed at creation), so the API layer's role needs EXECUTE on this
-- function and no write right on receipt_jobs (deploy/sql/roles.sql).
CREATE FUNCTION enqueue_receipt(
    receipt_data     text,
    order_id         text,
    user_id          text,
    product_id       text,
    transaction_id   text DEFAULT NULL,
    bundle_id        text DEFAULT NULL,
    order_created_at timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    v_bundle   text := bundle_id;
    v_problem  text;
    v_id       bigint;
    v_existing record;
    v_apps     bigint;
BEGIN
    IF coalesce(order_id, '') = '' OR coalesce(user_id, '') = '' OR coalesce(product_id, '') = '' THEN
        RAISE EXCEPTION 'enqueue_receipt: order_id, user_id and product_id are required'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- order_id and bundle_id are in a unique index, whose entries PostgreSQL limits to about 2.7 kB.
    IF octet_length(order_id) > 1000 OR octet_length(v_bundle) > 1000 THEN
        RAISE EXCEPTION 'enqueue_receipt: order_id and bundle_id may be at most 1000 bytes long (order_id is % bytes)',
                        octet_length(order_id)
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    IF v_bundle IS NULL THEN
        SELECT count(*), min(a.bundle_id) INTO v_apps, v_bundle FROM receipt_apps a;
        IF v_apps <> 1 THEN
            RAISE EXCEPTION 'enqueue_receipt: bundle_id is required (% apps are configured)', v_apps
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'pass bundle_id, or configure exactly one app in APPLE_BUNDLE_IDS and run receipt-worker migrate';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM receipt_apps a WHERE a.bundle_id = v_bundle) THEN
        RAISE EXCEPTION 'enqueue_receipt: unknown bundle_id "%"', v_bundle
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'add it to APPLE_BUNDLE_IDS and run receipt-worker migrate, or fix the caller';
    END IF;

    v_problem := receipt_input_problem(receipt_data);
    IF v_problem IS NOT NULL THEN
        -- Kept as a final verdict (without the unusable receipt) so the API layer hears of it like any other.
        INSERT INTO receipt_jobs AS j (state, bundle_id, order_id, user_id, product_id, transaction_id,
                                       order_created_at, receipt_data, receipt_hash, receipt_bytes, reason,
                                       last_error, finished_at)
        VALUES ('rejected', v_bundle, order_id, user_id, product_id, transaction_id, order_created_at, NULL,
                CASE WHEN receipt_data IS NULL THEN NULL
                     ELSE encode(sha256(convert_to(receipt_data, 'UTF8')), 'hex') END,
                octet_length(receipt_data), 'malformed_input', v_problem, now())
        RETURNING j.id INTO v_id;
        RETURN v_id;
    END IF;

    LOOP
        INSERT INTO receipt_jobs AS j (bundle_id, order_id, user_id, product_id, transaction_id, order_created_at,
                                       receipt_data)
        VALUES (v_bundle, order_id, user_id, product_id, nullif(transaction_id, ''), order_created_at, receipt_data)
        ON CONFLICT (bundle_id, order_id) WHERE state IN ('queued', 'running', 'retry', 'verified') DO NOTHING
        RETURNING j.id INTO v_id;
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;

        SELECT j.id, j.user_id, j.product_id INTO v_existing
        FROM receipt_jobs j
        WHERE j.bundle_id = v_bundle AND j.order_id = enqueue_receipt.order_id
          AND j.state IN ('queued', 'running', 'retry', 'verified');
        IF FOUND THEN
            IF v_existing.user_id <> user_id OR v_existing.product_id <> product_id THEN
                RAISE EXCEPTION 'order_conflict: order % of app % is already enqueued (job %) for another user or product',
                                order_id, v_bundle, v_existing.id
                    USING ERRCODE = 'RW409';
            END IF;
            RETURN v_existing.id;
        END IF;
        -- The open job became rejected or dead between the two statements: insert again.
    END LOOP;
END $$;

-- The API layer calls this in the same transaction in which it grants (or refuses) the order.
-- Returns false when the job is unknown, not final, or already delivered.
CREATE FUNCTION mark_verdict_delivered(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE receipt_jobs j SET delivered_at = now(), updated_at = now()
    WHERE j.id = mark_verdict_delivered.job_id AND j.finished_at IS NOT NULL AND j.delivered_at IS NULL;
    RETURN FOUND;
END $$;

INSERT INTO receipt_schema_migrations (version) VALUES ('002_enqueue') ON CONFLICT DO NOTHING;
