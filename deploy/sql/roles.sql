-- Least-privilege roles for receipt-worker.
--
-- Three NOLOGIN group roles; give each program its own login role that is a member of one of them:
--
--   receipt_api       the app's backend: enqueue_receipt(), read verdicts, the ledger and receipt_entitlements,
--                     mark_verdict_delivered()
--   receipt_worker    `receipt-worker work` and `receipt-worker sweep`
--   receipt_operator  people and dashboards: the three views, requeue, the audit log; `receipt-worker status`,
--                     `requeue`, `explain` (the columns it reads, never a receipt) and `set-account-token`
--
-- `receipt-worker migrate` is NOT run as any of these: it creates tables and functions, so it runs as the role that
-- owns them (the database owner, or a dedicated `receipt_owner`). Apply this file after the migrations, as that
-- owner or as a superuser (creating roles needs CREATEROLE), and again after a migration that adds a function:
--
--   receipt-worker migrate
--   psql -1 -v ON_ERROR_STOP=1 -f deploy/sql/roles.sql
--
-- The file is idempotent. Roles are cluster-wide; the grants apply to the current database only.
--
-- Login roles (choose your own names and passwords; keep passwords out of shell history):
--
--   CREATE ROLE payments_api         LOGIN PASSWORD '…' IN ROLE receipt_api;
--   CREATE ROLE receipt_worker_login LOGIN PASSWORD '…' IN ROLE receipt_worker;
--   CREATE ROLE alice                LOGIN PASSWORD '…' IN ROLE receipt_operator;
--
-- then DATABASE_URL=postgresql://receipt_worker_login:…@db.internal:5432/payments for the workers.
--
-- The worker functions are SECURITY INVOKER: they run with the caller's rights. So the table grants below are exactly
-- what each function touches, narrowed to columns where PostgreSQL allows it. What that leaves possible beyond the
-- functions is listed under each role. The functions the API layer and operators call (and retention's
-- receipt_prune()) are SECURITY DEFINER: they run with the owner's rights and search_path = pg_catalog, public,
-- pg_temp, so no other role may create objects in schema public (below).

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'receipt_api') THEN
        CREATE ROLE receipt_api NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'receipt_worker') THEN
        CREATE ROLE receipt_worker NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'receipt_operator') THEN
        CREATE ROLE receipt_operator NOLOGIN;
    END IF;
    -- The schema the migrations created their objects in (usually public).
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO receipt_api, receipt_worker, receipt_operator',
                   (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.oid = 'receipt_jobs'::regclass));
END $$;

-- Nobody but the owner creates objects where the SECURITY DEFINER functions look for them.
--
-- CREATE on schema public: PostgreSQL 14 and older give it to PUBLIC (every role). A role that can create in public
-- can plant a function there, say convert_to(text, text), that a SECURITY DEFINER function would call in place of the
-- built-in, with the owner's rights. PostgreSQL 15 no longer grants it; an upgraded cluster, or a database made from
-- an old template, still does. `receipt-worker migrate` and `status` warn while any role other than the owner can.
--
-- TEMP on this database: every role may create temporary tables by default. The SECURITY DEFINER functions search
-- pg_temp last, so a temporary table cannot stand in for one of ours; revoking TEMP takes the tool away as well.
-- It means that no role except the database owner and superusers may create temporary tables in this database any
-- more (other databases are not affected). A role that needs them gets them back by name:
--   GRANT TEMP ON DATABASE payments TO reporting_login;
-- receipt-worker's own roles need none.
--
-- Both take the owner of the schema (of the database) or a superuser; run by another role, this says so and goes on.
DO $$
BEGIN
    IF pg_has_role((SELECT nspowner FROM pg_namespace WHERE nspname = 'public'), 'MEMBER')
       OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    ELSE
        RAISE WARNING 'roles.sql: % does not own schema public, so PUBLIC may still create in it', current_user
            USING HINT = 'run REVOKE CREATE ON SCHEMA public FROM PUBLIC as its owner or a superuser';
    END IF;
    IF pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'MEMBER')
       OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('REVOKE TEMP ON DATABASE %I FROM PUBLIC', current_database());
    ELSE
        RAISE WARNING 'roles.sql: % does not own database %, so PUBLIC may still create temporary tables in it',
                      current_user, current_database()
            USING HINT = format('run REVOKE TEMP ON DATABASE %I FROM PUBLIC as its owner or a superuser',
                                current_database());
    END IF;
END $$;

-- Functions are executable by PUBLIC by default. Take that away, then give each role its own.
-- (Trigger functions need no EXECUTE grant to fire.)
REVOKE EXECUTE ON FUNCTION
    receipt_jobs_before_insert(),
    receipt_jobs_notify_enqueued(),
    receipt_jobs_notify_done(),
    receipt_transactions_guard(),
    receipt_input_problem(text),
    receipt_signed_input_problem(text),
    receipt_enqueue(text, text, text, text, text, text, text, text, text, timestamptz, uuid, text),
    enqueue_receipt(text, text, text, text, text, text, timestamptz),
    enqueue_transaction(text, text, text, text, text, text, timestamptz, uuid),
    mark_verdict_delivered(bigint),
    receipt_claim(text, integer, double precision),
    receipt_renew_leases(text, bigint[], uuid[], double precision),
    receipt_release(bigint[], uuid[]),
    receipt_credit_key(text, text, text, text),
    receipt_known_revocation(text, text, text, text, bigint),
    receipt_known_revoked(text, text, text, text, bigint),
    receipt_revoke(text, jsonb, bigint),
    receipt_revocation_change(bigint, text, timestamptz, text, timestamptz, text, bigint, bigint),
    receipt_event(jsonb),
    receive_notification(text, text),
    mark_event_delivered(bigint),
    receipt_notification_claim(text, integer, double precision, integer),
    receipt_notification_renew_leases(text, bigint[], uuid[], double precision),
    receipt_notification_revocation(bigint, text, text, timestamptz, jsonb, jsonb),
    receipt_notification_period_credit(bigint, text, text, text, text, timestamptz, jsonb, jsonb, boolean),
    receipt_period_credit_insert(text, text, text, jsonb, text, bigint, timestamptz, text, bigint),
    receipt_notification_event(text, timestamptz, jsonb, jsonb, jsonb),
    receipt_announced_credit(text, text, jsonb, text, bigint, timestamptz, text, text, jsonb),
    receipt_seen_credit(bigint, text, text, text, jsonb, jsonb),
    receipt_account_token_register(text, text, uuid, text),
    register_account_token(text, uuid, text),
    expect_purchase(text, text, text, uuid, text, interval),
    claim_purchase(text, text, text),
    receipt_notification_apply(bigint, uuid, jsonb),
    receipt_notification_apply_batch(bigint[], uuid[], jsonb[]),
    receipt_notification_reject(bigint[], uuid[], text[], text[]),
    receipt_notification_release(bigint[], uuid[]),
    receipt_credit(receipt_credit_request[]),
    receipt_complete(jsonb),
    receipt_sweep(integer, integer),
    receipt_prune(interval, interval, integer, interval, interval, interval, interval),
    receipt_requeue(bigint, text),
    receipt_requeue_dead(text),
    receipt_requeue_dead_notifications(text),
    receipt_refund_notification(bigint, text, text, text, timestamptz, jsonb, jsonb),
    set_customer_consent(text, boolean),
    record_consumption(text, integer),
    answer_refund_request(text, text, text, integer, boolean),
    receipt_refund_requests_due(integer, integer, integer),
    receipt_refund_request_result(bigint, text, text, text, double precision),
    receipt_transactions_price_check(),
    receipt_subscription_apply(text, text, timestamptz, jsonb, jsonb, jsonb, bigint),
    receipt_subscription_credited(bigint),
    receipt_subscription_write(receipt_subscriptions),
    receipt_subscription_events(receipt_subscriptions, receipt_subscriptions, jsonb),
    receipt_subscription_refresh(jsonb),
    receipt_subscriptions_stale(text, text, double precision, double precision, integer),
    receipt_refund_recover(jsonb),
    receipt_refund_candidates(timestamptz, integer),
    receipt_jobs_unlink(),
    receipt_known_revocations_guard(),
    receipt_revocations_guard(),
    receipt_country_alpha2(text),
    receipt_reconcile(date, text, jsonb),
    receipt_reconciliation_claim(time, text, double precision, integer),
    receipt_reconciliation_finish(date, text, bigint, text, double precision),
    receipt_period_extend(bigint, text, timestamptz, jsonb),
    receipt_renewal_extension_summary(bigint, text, text, timestamptz, jsonb),
    receipt_renewal_extension_request(text, text, text, text, text, text, text[], integer, integer),
    receipt_renewal_extension_result(text, text, text, timestamptz, text, bigint, bigint, timestamptz),
    enqueue_app_transaction(text, text, text, text),
    receipt_app_transaction_credit(bigint, jsonb),
    receipt_notification_test_lookup(text),
    receipt_notification_test_record(text, text, text, timestamptz, text, text, bigint, text)
FROM PUBLIC;

-- Start from nothing, so re-running this file after editing it also takes rights away.
REVOKE ALL ON receipt_jobs, receipt_transactions, receipt_purchase_owners, receipt_products, receipt_apps,
              receipt_admin_log, receipt_schema_migrations, receipt_schema_definitions, receipt_queue_summary,
              receipt_jobs_stuck, receipt_failures, receipt_notifications, receipt_events, receipt_revocations,
              receipt_notifications_summary, receipt_entitlements, receipt_settings, receipt_known_revocations,
              receipt_product_prices, receipt_customer_consents, receipt_consumption, receipt_refund_requests,
              receipt_revenue, receipt_price_mismatches, receipt_refund_summary, receipt_subscriptions,
              receipt_retention, receipt_account_tokens, receipt_unclaimed, receipt_unclaimed_purchases
FROM receipt_api, receipt_worker, receipt_operator;
REVOKE ALL ON receipt_reconciliations, receipt_reconciliation_lines, receipt_reconciliation_schedule
FROM receipt_api, receipt_worker, receipt_operator;
REVOKE ALL ON receipt_renewal_extensions, receipt_period_extensions FROM receipt_api, receipt_worker, receipt_operator;
REVOKE ALL ON receipt_app_transactions, receipt_notification_tests FROM receipt_api, receipt_worker, receipt_operator;
-- receipt_settings (the enqueue size limits) is the owner's alone: no role gets any right on it.


-- receipt_api ---------------------------------------------------------------------------------------------------------

GRANT EXECUTE ON FUNCTION
    enqueue_receipt(text, text, text, text, text, text, timestamptz),
    enqueue_transaction(text, text, text, text, text, text, timestamptz, uuid),
    mark_verdict_delivered(bigint),
    receive_notification(text, text),
    mark_event_delivered(bigint)
TO receipt_api;
-- Both functions are SECURITY DEFINER (sql/functions/enqueue_receipt.sql, sql/functions/mark_verdict_delivered.sql): they write receipt_jobs with their owner's rights, so
-- receipt_api needs no write right on any table.

-- Reading verdicts (every column except the receipt itself and the lease bookkeeping).
GRANT SELECT (id, state, kind, bundle_id, order_id, user_id, product_id, transaction_id, order_created_at,
              app_account_token, receipt_hash, attempts, max_attempts, apple_status, environment, reason, result,
              last_error, created_at, updated_at, finished_at, delivered_at)
    ON receipt_jobs TO receipt_api;
-- The ledger: what was credited, until when, and what was revoked.
GRANT SELECT ON receipt_transactions TO receipt_api;
-- What happened to purchases after their verdicts (revocations, renewals, ...), and each ledger row's revocations.
GRANT SELECT ON receipt_events, receipt_revocations TO receipt_api;
-- What Apple said of revocations, credited here or not (consulted when crediting).
GRANT SELECT ON receipt_known_revocations TO receipt_api;
-- What each user owns now, and until when (sql/views/receipt_entitlements.sql).
GRANT SELECT ON receipt_entitlements TO receipt_api;
-- Each subscription's status, renewal preferences and grace period (issue 23).
GRANT SELECT ON receipt_subscriptions TO receipt_api;
GRANT SELECT ON receipt_period_extensions TO receipt_api;
-- Refund requests (issue 24): consent, consumption and the app's own answer, through SECURITY DEFINER functions
-- (sql/functions/set_customer_consent.sql, record_consumption.sql, answer_refund_request.sql); the requests, revenue
-- and price mismatches to read.
GRANT EXECUTE ON FUNCTION
    set_customer_consent(text, boolean),
    record_consumption(text, integer),
    answer_refund_request(text, text, text, integer, boolean)
TO receipt_api;
GRANT SELECT ON receipt_refund_requests, receipt_revenue, receipt_price_mismatches, receipt_refund_summary,
                receipt_product_prices TO receipt_api;
-- Lost orders (issue 37): whose appAccountToken is whose and orders that await their purchase, both SECURITY
-- DEFINER (sql/functions/register_account_token.sql, expect_purchase.sql); the purchases nobody could be credited for
-- yet, to read.
GRANT EXECUTE ON FUNCTION
    register_account_token(text, uuid, text),
    expect_purchase(text, text, text, uuid, text, interval)
TO receipt_api;
GRANT SELECT ON receipt_unclaimed_purchases TO receipt_api;
-- App transactions (issue 38): StoreKit's AppTransaction, verified by the workers (SECURITY DEFINER, as
-- enqueue_transaction()); the apps' original purchases they recorded, to read.
GRANT EXECUTE ON FUNCTION enqueue_app_transaction(text, text, text, text) TO receipt_api;
GRANT SELECT ON receipt_app_transactions TO receipt_api;
-- (claim_purchase() is support's, receipt_operator's: it credits a waiting purchase to whoever it names.)


-- receipt_worker ------------------------------------------------------------------------------------------------------

GRANT EXECUTE ON FUNCTION
    receipt_claim(text, integer, double precision),
    receipt_renew_leases(text, bigint[], uuid[], double precision),
    receipt_release(bigint[], uuid[]),
    receipt_complete(jsonb),
    receipt_credit(receipt_credit_request[]),          -- called by receipt_complete()
    receipt_credit_key(text, text, text, text),        -- called by receipt_complete() and receipt_credit()
    receipt_known_revocation(text, text, text, text, bigint),  -- called by receipt_credit(), receipt_known_revoked()
    receipt_known_revoked(text, text, text, text, bigint),  -- called by receipt_credit(), receipt_notification_apply()
    receipt_revoke(text, jsonb, bigint),               -- called by receipt_complete()
    receipt_revocation_change(bigint, text, timestamptz, text, timestamptz, text, bigint, bigint),
    receipt_event(jsonb),
    receipt_notification_claim(text, integer, double precision, integer),   -- App Store Server Notifications
    receipt_notification_renew_leases(text, bigint[], uuid[], double precision),
    receipt_notification_apply(bigint, uuid, jsonb),
    receipt_notification_apply_batch(bigint[], uuid[], jsonb[]),  -- a batch of receipt_notification_apply()
    -- called by receipt_notification_apply(), one rule each:
    receipt_notification_revocation(bigint, text, text, timestamptz, jsonb, jsonb),
    receipt_notification_period_credit(bigint, text, text, text, text, timestamptz, jsonb, jsonb, boolean),
    receipt_period_credit_insert(text, text, text, jsonb, text, bigint, timestamptz, text, bigint),  -- ledger rows
    -- a purchase Apple announced, credited to its token's customer (SECURITY DEFINER: it may make the order):
    receipt_announced_credit(text, text, jsonb, text, bigint, timestamptz, text, text, jsonb),
    -- the purchases a verified answer showed beside the job's own, offered after its verdict (lost orders):
    receipt_seen_credit(bigint, text, text, text, jsonb, jsonb),
    receipt_notification_event(text, timestamptz, jsonb, jsonb, jsonb),
    receipt_notification_reject(bigint[], uuid[], text[], text[]),
    receipt_notification_release(bigint[], uuid[]),
    receipt_sweep(integer, integer),
    -- retention (`work`'s RETENTION_* settings, `sweep --clear-receipts-after-days …`):
    receipt_prune(interval, interval, integer, interval, interval, interval, interval),
    receive_notification(text, text)                   -- `notifications-replay` (Get Notification History)
TO receipt_worker;

GRANT SELECT, UPDATE ON receipt_jobs TO receipt_worker;
GRANT SELECT, INSERT ON receipt_transactions TO receipt_worker;
GRANT UPDATE (revoked_at, revocation_reason) ON receipt_transactions TO receipt_worker;
GRANT SELECT, INSERT ON receipt_purchase_owners TO receipt_worker;
GRANT SELECT ON receipt_products TO receipt_worker;
GRANT SELECT, INSERT ON receipt_revocations, receipt_events, receipt_known_revocations TO receipt_worker;
GRANT SELECT, UPDATE ON receipt_notifications TO receipt_worker;
-- /readyz (migrations current?) and the queue gauges of the metrics endpoint.
GRANT SELECT ON receipt_schema_migrations, receipt_schema_definitions, receipt_queue_summary TO receipt_worker;
-- `receipt-worker work` registers APPLE_BUNDLE_IDS in receipt_apps when it starts (without this it logs a warning
-- and carries on; `migrate` registers them too).
GRANT SELECT, INSERT (bundle_id, app_apple_id), UPDATE (app_apple_id) ON receipt_apps TO receipt_worker;
-- Refund requests and revenue (issue 24): CONSUMPTION_REQUEST and REFUND notifications, the answers `work` sends,
-- the price check of each credit.
GRANT EXECUTE ON FUNCTION
    receipt_refund_notification(bigint, text, text, text, timestamptz, jsonb, jsonb),  -- receipt_notification_apply()
    receipt_refund_requests_due(integer, integer, integer),
    receipt_refund_request_result(bigint, text, text, text, double precision),
    receipt_transactions_price_check()                 -- trigger of receipt_transactions
TO receipt_worker;
GRANT UPDATE (revocation_type, revocation_percentage) ON receipt_transactions TO receipt_worker;
GRANT SELECT, INSERT, UPDATE ON receipt_refund_requests TO receipt_worker;
GRANT SELECT ON receipt_customer_consents, receipt_consumption, receipt_product_prices TO receipt_worker;
-- Subscriptions (issue 23): kept from notifications and credits.
GRANT EXECUTE ON FUNCTION
    receipt_subscription_apply(text, text, timestamptz, jsonb, jsonb, jsonb, bigint),  -- receipt_notification_apply()
    receipt_subscription_credited(bigint),                                            -- receipt_complete()
    receipt_subscription_write(receipt_subscriptions),   -- the two above
    receipt_subscription_events(receipt_subscriptions, receipt_subscriptions, jsonb),
    receipt_subscription_refresh(jsonb),            -- subscriptions-refresh, and work by itself
    receipt_subscriptions_stale(text, text, double precision, double precision, integer)
TO receipt_worker;
GRANT SELECT, INSERT, UPDATE ON receipt_subscriptions TO receipt_worker;
-- Refund recovery (issue 38): `refunds --apply`, a REFUND notification's rules applied to what Get Refund History
-- returns (receipt_notification_revocation(), receipt_refund_notification(), granted above).
GRANT EXECUTE ON FUNCTION
    receipt_refund_recover(jsonb),
    receipt_refund_candidates(timestamptz, integer)    -- refunds --all-credited-since
TO receipt_worker;
-- Reconciliation with Apple's Sales reports (issue 26): `reconcile`, and `work` by itself at RECONCILE_AT.
-- receipt_reconcile() is SECURITY DEFINER (sql/functions/receipt_reconcile.sql): it reads the ledger and writes the
-- run, its lines and its event with the owner's rights, so operators may run `reconcile` too.
GRANT EXECUTE ON FUNCTION
    receipt_reconcile(date, text, jsonb),
    receipt_reconciliation_claim(time, text, double precision, integer),
    receipt_reconciliation_finish(date, text, bigint, text, double precision)
TO receipt_worker;
GRANT SELECT ON receipt_reconciliations, receipt_reconciliation_lines TO receipt_worker;
GRANT SELECT, INSERT, UPDATE ON receipt_reconciliation_schedule TO receipt_worker;
-- Renewal-date extensions (issue 38): a RENEWAL_EXTENDED notification moves its period's expiry in the ledger (recorded
-- in receipt_period_extensions first: the ledger's guard allows nothing else), a RENEWAL_EXTENSION SUMMARY completes
-- its mass request.
GRANT EXECUTE ON FUNCTION
    receipt_period_extend(bigint, text, timestamptz, jsonb),                        -- receipt_notification_apply()
    receipt_renewal_extension_summary(bigint, text, text, timestamptz, jsonb)       -- receipt_notification_apply()
TO receipt_worker;
GRANT UPDATE (expires_date) ON receipt_transactions TO receipt_worker;
GRANT SELECT, INSERT ON receipt_period_extensions TO receipt_worker;
GRANT SELECT, UPDATE ON receipt_renewal_extensions TO receipt_worker;
-- App transactions (issue 38): recorded by receipt_complete() once verified.
GRANT EXECUTE ON FUNCTION receipt_app_transaction_credit(bigint, jsonb) TO receipt_worker;
GRANT SELECT, INSERT ON receipt_app_transactions TO receipt_worker;


-- receipt_operator ----------------------------------------------------------------------------------------------------

GRANT SELECT ON receipt_queue_summary, receipt_jobs_stuck, receipt_failures, receipt_admin_log,
                receipt_notifications_summary TO receipt_operator;
GRANT SELECT ON receipt_revenue, receipt_price_mismatches, receipt_refund_summary, receipt_retention TO receipt_operator;
GRANT SELECT ON receipt_subscriptions TO receipt_operator;
-- Lost orders (issue 37): what waits for a customer, and support's claim (SECURITY DEFINER); `set-account-token
-- --user-id` registers the token it gave a purchase at Apple (SECURITY DEFINER too).
GRANT SELECT ON receipt_unclaimed_purchases TO receipt_operator;
GRANT EXECUTE ON FUNCTION claim_purchase(text, text, text), register_account_token(text, uuid, text)
    TO receipt_operator;
-- `receipt-worker extend-renewal` (issue 38): each request recorded before Apple is asked, and Apple's answer, only
-- through these two (SECURITY DEFINER: requested_by is the login that asked).
GRANT EXECUTE ON FUNCTION
    receipt_renewal_extension_request(text, text, text, text, text, text, text[], integer, integer),
    receipt_renewal_extension_result(text, text, text, timestamptz, text, bigint, bigint, timestamptz)
TO receipt_operator;
GRANT SELECT ON receipt_renewal_extensions, receipt_period_extensions TO receipt_operator;
-- `receipt-worker explain` (support's one look at an order, a customer or a transaction): exactly the columns it
-- reads (sql: Sources/CustomerSupport/ExplainQueries.swift). Never the receipts and signed data: receipt_jobs'
-- receipt_data and signed_transaction, receipt_notifications.signed_payload, receipt_unclaimed.purchase, nor the
-- answers sent to Apple about refunds (receipt_refund_requests.answer, app_answer) or the lease bookkeeping.
GRANT SELECT (id, kind, state, bundle_id, order_id, user_id, product_id, transaction_id, app_account_token, attempts,
              apple_status, environment, reason, result, last_error, created_at, finished_at, delivered_at)
    ON receipt_jobs TO receipt_operator;
GRANT SELECT (id, environment, credit_key, transaction_id, original_transaction_id, product_id, bundle_id, order_id,
              user_id, job_id, purchase_date, expires_date, credited_at, price, currency, revoked_at, revocation_reason)
    ON receipt_transactions TO receipt_operator;
GRANT SELECT (id, ledger_id, recorded_at, action, effective_at, reason, source, notification_id)
    ON receipt_revocations TO receipt_operator;
GRANT SELECT (id, received_at, notification_type, subtype, environment, transaction_id, original_transaction_id,
              source, state, reason, finished_at, last_error)
    ON receipt_notifications TO receipt_operator;
GRANT SELECT (id, created_at, kind, notification_type, subtype, user_id, order_id, transaction_id,
              original_transaction_id, effective_at, expires_at, reason, ledger_id, job_id, delivered_at)
    ON receipt_events TO receipt_operator;
GRANT SELECT (id, received_at, environment, transaction_id, product_id, user_id, reason, state, skip_reason, outcome,
              respond_by, answered_at, last_error)
    ON receipt_refund_requests TO receipt_operator;
GRANT SELECT (id, first_seen, environment, bundle_id, product_id, transaction_id, original_transaction_id,
              app_account_token, source, note, claimed_at, ledger_id)
    ON receipt_unclaimed TO receipt_operator;
GRANT SELECT ON receipt_account_tokens TO receipt_operator;
GRANT SELECT (bundle_id) ON receipt_apps TO receipt_operator;
-- Reconciliation (issue 26): the runs, their differences and work's schedule to read; `receipt-worker reconcile`.
GRANT SELECT ON receipt_reconciliations, receipt_reconciliation_lines, receipt_reconciliation_schedule
    TO receipt_operator;
GRANT EXECUTE ON FUNCTION receipt_reconcile(date, text, jsonb) TO receipt_operator;
-- `receipt-worker notifications test` (issue 38): where Apple's TEST notification is here, and each run recorded
-- (both SECURITY DEFINER: no payload is readable); `status` shows the last pass and failure. The apps' original
-- purchases, to read.
GRANT EXECUTE ON FUNCTION receipt_notification_test_lookup(text),
    receipt_notification_test_record(text, text, text, timestamptz, text, text, bigint, text) TO receipt_operator;
GRANT SELECT ON receipt_notification_tests, receipt_app_transactions TO receipt_operator;
GRANT EXECUTE ON FUNCTION receipt_requeue(bigint, text), receipt_requeue_dead(text),
    receipt_requeue_dead_notifications(text) TO receipt_operator;
-- All are SECURITY DEFINER (sql/functions/receipt_requeue*.sql): an operator cannot change jobs or notifications except through them, and
-- every change is in receipt_admin_log under the operator's login name. Receipts stay unreadable to operators.
