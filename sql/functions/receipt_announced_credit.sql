-- A verified purchase that reached the service without the app (issue 37, lost orders), credited to its customer
-- exactly once, whatever arrived first:
--   p_source 'notification'  Apple announced it (ONE_TIME_CHARGE, SUBSCRIBED, OFFER_REDEEMED, DID_RENEW of a chain
--                            nobody owns yet, ...), from receipt_notification_apply(); the customer is the one its
--                            appAccountToken is registered to (receipt_account_tokens)
--   p_source 'token'         its token was registered just now (register_account_token(), expect_purchase())
--   p_source 'claim'         support named the customer (claim_purchase(): p_user, p_order)
--   p_source 'receipt',      a verified answer for another order showed it (receipt_seen_credit(): a receipt, a
--            'transaction'   signed transaction or Apple's transaction history); credited only when its token was
--                            registered before the purchase was made, and never kept unclaimed
-- p_tx: the transaction's fields as the worker writes them (NotificationOutcome.Transaction, with app_account_token).
-- p_rules: the workers' rule the SQL cannot know (NotificationOutcome.CreditRules): {"sandbox_users": [...]} under
-- SANDBOX_POLICY=allowlist; a purchase it refuses is kept unclaimed, saying so. Kept with it, it holds when its token
-- is registered later; support's claim decides for itself (NULL). A family member's shared copy is never credited by
-- its token (the token is the purchaser's).
--
-- Nothing is credited when the purchase was credited before (its credit key is in the ledger: the app's copy came
-- first), when a notification applied before revoked it (rule 14), or when its chain belongs to another user (rule 5).
-- Otherwise the purchase completes, in this order of preference:
--   1. an open job of the customer's for this app that names this transaction (the app's copy, being verified);
--   2. the customer's oldest open job for this app, product and token that names no transaction (an expected order,
--      or the app's copy that did not say which transaction);
--   3. an order of its own: a job verified from the start, order id apple:<transactionId> (or the claim's order).
-- The job is verified and the ledger row written in this transaction; a worker that held the job loses its lease
-- (its write finds the job final and changes nothing). A purchase nobody can be credited for is kept in
-- receipt_unclaimed (view receipt_unclaimed_purchases) until its token is registered or support claims it.
--
-- Returns the ledger id credited (NULL when nothing was), the job it was credited to, and a note saying what
-- happened. SECURITY DEFINER: the worker's role (through receipt_notification_apply()) needs EXECUTE on it and no
-- right to insert jobs or read tokens; the API layer's reaches it only through register_account_token(),
-- expect_purchase() and claim_purchase().
CREATE OR REPLACE FUNCTION receipt_announced_credit(
    p_env text, p_bundle text, p_tx jsonb, p_source text, p_notification_id bigint, p_signed timestamptz,
    p_user text DEFAULT NULL, p_order text DEFAULT NULL, p_rules jsonb DEFAULT NULL
) RETURNS TABLE (ledger_id bigint, job_id bigint, note text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_tid      text := p_tx->>'transaction_id';
    v_original text := coalesce(nullif(p_tx->>'original_transaction_id', ''), p_tx->>'transaction_id');
    v_product  text := p_tx->>'product_id';
    v_token    uuid;
    v_key      text;
    v_user     text := p_user;
    v_owner    text;
    v_job      receipt_jobs;
    v_ledger   bigint;
    v_purchase jsonb;
    v_note     text;
    v_made     boolean := false;
    v_duration interval;
    v_expires  timestamptz;
    v_registered timestamptz;
    v_wake     text;
BEGIN
    IF coalesce(v_tid, '') = '' OR coalesce(v_product, '') = '' THEN
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'no credit: the transaction has no id or product'::text;
        RETURN;
    END IF;
    -- Apple's tokens are UUIDs; anything else is no token (never an error that would stop the notification).
    IF p_tx->>'app_account_token' ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$' THEN
        v_token := (p_tx->>'app_account_token')::uuid;
    END IF;
    SELECT receipt_credit_key(p.kind, v_tid, v_original, p_tx->>'web_order_line_item_id'), p.duration
    INTO v_key, v_duration
    FROM (SELECT 1) one LEFT JOIN receipt_products p ON p.product_id = v_product;

    -- The token first: register_account_token() takes the same lock before it records the token and looks for the
    -- purchases waiting for it, so a purchase and its token's registration at the same moment meet (the one after
    -- the other sees it), and every lock here is taken in one order: token, revocations, chain, job, owner.
    IF v_token IS NOT NULL THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('receipt_token:' || v_token::text, 0));
    END IF;

    -- Revocations (rule 14), under the lock receipt_credit() and receipt_notification_period_credit() take shared:
    -- a REFUND recorded before is seen here, one recorded after finds this credit. 1380667990 is 'RKRV' in ASCII.
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1380667990, 0);
    IF receipt_known_revoked(p_env, v_tid, v_original, p_tx->>'web_order_line_item_id',
                             (p_tx->>'purchase_date_ms')::bigint) THEN
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'no credit: Apple revoked this purchase before it was credited'::text;
        RETURN;
    END IF;
    -- One announced purchase at a time per chain: two copies of it (a notification and a claim, two notifications
    -- of one purchase) wait for each other here, so the second sees the first's credit.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('receipt_announced:' || p_env || '/' || v_original, 0));
    IF EXISTS (SELECT 1 FROM receipt_transactions t WHERE t.environment = p_env AND t.credit_key = v_key) THEN
        UPDATE receipt_unclaimed u
        SET claimed_at = coalesce(u.claimed_at, pg_catalog.now()),
            ledger_id = coalesce(u.ledger_id, (SELECT t.id FROM receipt_transactions t
                                                WHERE t.environment = p_env AND t.credit_key = v_key))
        WHERE u.environment = p_env AND u.transaction_id = v_tid AND u.claimed_at IS NULL;
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'no new credit: this purchase was credited before'::text;
        RETURN;
    END IF;

    IF v_user IS NULL AND v_token IS NOT NULL THEN
        SELECT a.user_id, a.created_at INTO v_user, v_registered FROM receipt_account_tokens a
        WHERE a.app_account_token = v_token AND (a.bundle_id IS NULL OR a.bundle_id = p_bundle);
    END IF;
    IF p_source IN ('receipt', 'transaction') AND v_user IS NOT NULL
       AND (p_tx->>'purchase_date_ms' IS NULL  -- no date: not shown to be after the registration
            OR v_registered > pg_catalog.to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0)
                              + interval '5 minutes') THEN
        -- Seen beside another order (receipt_seen_credit()): a purchase made before its token was registered here
        -- may have been credited by the system this service replaced. Apple's notification, a claim, or the
        -- registration of a token it kept unclaimed credit it instead.
        RETURN QUERY SELECT NULL::bigint, NULL::bigint,
            pg_catalog.format('no credit: made before appAccountToken %s was registered (%s)', v_token, v_registered);
        RETURN;
    END IF;
    IF v_user IS NULL THEN
        v_note := CASE WHEN v_token IS NULL THEN 'no appAccountToken: nobody to credit it to'
                       ELSE 'appAccountToken ' || v_token || ' is registered to nobody' END;
    ELSIF p_source <> 'claim' AND p_tx->>'in_app_ownership_type' = 'FAMILY_SHARED' THEN
        -- A family member's copy of a purchase: its token, if any, is the purchaser's, whose own copy (another
        -- transaction, another credit key) is credited to them; crediting this one to the token's owner would pay
        -- the purchaser twice. The family member's app sends it, or support claims it.
        v_note := 'a family member''s shared purchase: its token names the purchaser, who has their own copy';
    ELSIF p_env <> 'Production' AND pg_catalog.jsonb_typeof(p_rules->'sandbox_users') = 'array'
          AND NOT (p_rules->'sandbox_users') ? v_user THEN
        v_note := pg_catalog.format('a %s purchase, and %s is not in SANDBOX_ALLOWED_USERS (SANDBOX_POLICY is allowlist)',
                                    p_env, v_user);
    END IF;

    -- The order it completes: the app's copy of this transaction, else an open order for this product and token.
    -- Locked before the chain's owner row, in the order receipt_complete() takes them (the job, then the owner).
    IF v_note IS NULL AND p_order IS NULL THEN
        -- Two lookups, each on its own partial index of open jobs (receipt_jobs_open_transaction, _open_token): one
        -- statement with an OR was planned on the open-order index, which also holds every verified job.
        SELECT j.* INTO v_job FROM receipt_jobs j
        WHERE j.transaction_id = v_tid AND j.state IN ('queued', 'running', 'retry')
          AND j.bundle_id = p_bundle AND j.user_id = v_user
        ORDER BY j.created_at, j.id
        LIMIT 1
        FOR UPDATE;
        IF v_job.id IS NULL AND v_token IS NOT NULL THEN
            SELECT j.* INTO v_job FROM receipt_jobs j
            WHERE j.app_account_token = v_token AND j.state IN ('queued', 'running', 'retry')
              AND j.transaction_id IS NULL AND j.bundle_id = p_bundle AND j.user_id = v_user
              AND j.product_id = v_product
              -- A purchase made for this order: not before it (rule 3's 5 minutes of slack), and not a period that
              -- had ended by then (rule 4). An older one is credited as an order of its own.
              AND (p_tx->>'purchase_date_ms')::bigint
                  >= (extract(epoch FROM coalesce(j.order_created_at, j.created_at)) * 1000)::bigint - 300000
              AND (p_tx->>'expires_date_ms' IS NULL
                   OR (p_tx->>'expires_date_ms')::bigint
                      > (extract(epoch FROM coalesce(j.order_created_at, j.created_at)) * 1000)::bigint)
            ORDER BY j.created_at, j.id
            LIMIT 1
            FOR UPDATE;
        END IF;
    ELSIF v_note IS NULL THEN
        SELECT j.* INTO v_job FROM receipt_jobs j
        WHERE j.bundle_id = p_bundle AND j.order_id = p_order AND j.state IN ('queued', 'running', 'retry', 'verified')
        FOR UPDATE;
        IF FOUND AND (v_job.user_id <> v_user OR v_job.product_id <> v_product OR v_job.state = 'verified') THEN
            RAISE EXCEPTION 'order_conflict: order % of app % is already % (job %) for user % and product %',
                            p_order, p_bundle, v_job.state, v_job.id, v_job.user_id, v_job.product_id
                USING ERRCODE = 'RW409',
                      HINT = 'claim it with another order id, or without one (apple:<transactionId> is used)';
        END IF;
    END IF;

    IF v_note IS NULL AND v_duration IS NOT NULL THEN
        -- A non-renewing subscription: Apple gives no expiry, so its period is stacked as receipt_credit() stacks
        -- it, under the same lock per (environment, product, user), taken after the job as receipt_complete() does.
        -- 1381192779 is 'RSTK' in ASCII.
        PERFORM pg_catalog.pg_advisory_xact_lock(1381192779, pg_catalog.hashtext(p_env || '/' || v_product || '/' || v_user));
        v_expires := greatest(pg_catalog.to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0),
                              (SELECT pg_catalog.max(t.expires_date) FROM receipt_transactions t
                               WHERE t.user_id = v_user AND t.product_id = v_product AND t.environment = p_env
                                 AND t.revoked_at IS NULL))
                     + v_duration;
        p_tx := p_tx || pg_catalog.jsonb_build_object(
            'expires_date_ms', (extract(epoch FROM v_expires) * 1000)::bigint);
    END IF;
    IF v_note IS NULL THEN
        -- The chain belongs to the first user it was credited for (rule 5).
        INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
        VALUES (p_env, v_original, v_user)
        ON CONFLICT DO NOTHING;
        SELECT o.user_id INTO v_owner FROM receipt_purchase_owners o
        WHERE o.environment = p_env AND o.original_transaction_id = v_original;
        IF v_owner IS DISTINCT FROM v_user THEN
            v_note := pg_catalog.format('its purchase chain belongs to another user than %s', v_user);
        END IF;
    END IF;
    IF v_note IS NULL AND v_job.id IS NULL THEN
        -- A job verified from the start is no work: no NOTIFY receipt_jobs to wake the workers for it (the
        -- statement trigger sends one unless receipt_worker.notify is off; restored right after).
        v_wake := pg_catalog.current_setting('receipt_worker.notify', true);
        PERFORM pg_catalog.set_config('receipt_worker.notify', 'off', true);
        INSERT INTO receipt_jobs AS j (state, kind, bundle_id, order_id, user_id, product_id, transaction_id,
                                       app_account_token, environment)
        VALUES ('verified', CASE WHEN p_source = 'claim' THEN 'claimed' ELSE 'announced' END, p_bundle,
                coalesce(p_order, 'apple:' || v_tid), v_user, v_product, v_tid, v_token, p_env)
        ON CONFLICT (bundle_id, order_id) WHERE state IN ('queued', 'running', 'retry', 'verified') DO NOTHING
        RETURNING j.* INTO v_job;
        PERFORM pg_catalog.set_config('receipt_worker.notify', coalesce(v_wake, ''), true);
        IF v_job.id IS NULL THEN
            -- The order id is taken (enqueue refuses apple: ids, so only a row made some other way): kept, never
            -- raised, so the notification is applied and the purchase waits for support.
            v_note := pg_catalog.format('order %s of app %s is taken by another job',
                                        coalesce(p_order, 'apple:' || v_tid), p_bundle);
        END IF;
        v_made := true;
    END IF;

    IF v_note IS NOT NULL AND p_source IN ('receipt', 'transaction') THEN
        -- Seen beside another order: not kept. Apple's notification of it keeps it unclaimed, and keeping every
        -- token-bearing purchase of every answer would fill receipt_unclaimed with purchases made before the
        -- service knew their customers.
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'no credit: ' || v_note;
        RETURN;
    END IF;
    IF v_note IS NOT NULL THEN
        INSERT INTO receipt_unclaimed AS u (environment, bundle_id, product_id, transaction_id, original_transaction_id,
                                            app_account_token, purchase_date, price, currency, source,
                                            notification_id, purchase, signed_at, note, rules)
        VALUES (p_env, p_bundle, v_product, v_tid, v_original, v_token,
                pg_catalog.to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0),
                pg_catalog.round((p_tx->>'price_milliunits')::numeric / 1000, 3), nullif(p_tx->>'currency', ''), p_source,
                p_notification_id, p_tx, p_signed, v_note, p_rules)
        ON CONFLICT (environment, transaction_id) DO UPDATE SET note = EXCLUDED.note
        WHERE u.claimed_at IS NULL;
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'unclaimed: ' || v_note;
        RETURN;
    END IF;

    v_ledger := receipt_period_credit_insert(p_env, p_bundle, v_user, p_tx, v_original, p_notification_id, p_signed,
                                             v_job.order_id, v_job.id);
    IF v_ledger IS NULL THEN
        -- The app's copy was credited meanwhile, for another order (the lock above orders announced copies only):
        -- nothing here, and the order made for it goes again.
        IF v_made THEN
            DELETE FROM receipt_jobs j WHERE j.id = v_job.id;
        END IF;
        RETURN QUERY SELECT NULL::bigint, NULL::bigint, 'no new credit: this purchase was credited before'::text;
        RETURN;
    END IF;

    v_purchase := pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
        'transaction_id', v_tid, 'original_transaction_id', v_original,
        'web_order_line_item_id', p_tx->'web_order_line_item_id', 'product_id', v_product,
        'quantity', coalesce((p_tx->>'quantity')::integer, 1), 'purchase_date_ms', p_tx->'purchase_date_ms',
        'expires_date_ms', p_tx->'expires_date_ms', 'in_app_ownership_type', p_tx->'in_app_ownership_type',
        'price_milliunits', p_tx->'price_milliunits', 'currency', p_tx->'currency', 'storefront', p_tx->'storefront'));
    UPDATE receipt_jobs j
    SET state = 'verified', reason = NULL, environment = p_env, transaction_id = coalesce(j.transaction_id, v_tid),
        result = pg_catalog.jsonb_build_object('environment', p_env, 'credited', v_purchase, 'credit_key', v_key,
                                    'source', p_source),
        last_error = NULL, locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = pg_catalog.now(),
        finished_at = pg_catalog.now()
    WHERE j.id = v_job.id;

    UPDATE receipt_unclaimed u SET claimed_at = pg_catalog.now(), ledger_id = v_ledger
    WHERE u.environment = p_env AND u.transaction_id = v_tid AND u.claimed_at IS NULL;
    PERFORM receipt_event(pg_catalog.jsonb_build_object(
        'kind', 'credited', 'reason', p_source, 'user_id', v_user, 'order_id', v_job.order_id, 'bundle_id', p_bundle,
        'environment', p_env, 'transaction_id', v_tid, 'original_transaction_id', v_original, 'product_id', v_product,
        'effective_at', pg_catalog.to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0),
        'expires_at', pg_catalog.to_timestamp((p_tx->>'expires_date_ms')::bigint / 1000.0), 'ledger_id', v_ledger,
        'job_id', v_job.id, 'notification_id', p_notification_id));
    RETURN QUERY SELECT v_ledger, v_job.id, pg_catalog.format('credited to %s, order %s', v_user, v_job.order_id);
END $$;
