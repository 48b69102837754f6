-- receipt-worker's SQL, in the order it is applied.
--
-- migrations/   schema only (tables, columns, indexes, types, data fixes): each file once, in number order, recorded
--               in receipt_schema_migrations. Forward-only: a file, once applied, never changes; a change of schema
--               is a new numbered file.
-- functions/    the current definition of each function, one file each;
-- triggers/     each trigger function with the triggers that call it;
-- views/        the operators' views:
--               applied after the migrations, every time one of them changes (and after any migration), so each
--               file is the one place its object is defined. Recorded in receipt_schema_definitions.
--
-- `receipt-worker migrate` reads this file for the order (its \ir lines) and applies all of it in one transaction
-- under an advisory lock, skipping what is recorded with an unchanged checksum. By hand, from any directory:
--   psql -v ON_ERROR_STOP=1 -1 -f sql/apply.sql
-- which applies the migrations not recorded yet and every definition (the next `migrate` records their checksums).

-- receipt-worker's objects live in schema public: the SECURITY DEFINER functions run with
-- search_path = pg_catalog, public, pg_temp. Refuse to create them anywhere else.
DO $$
BEGIN
    IF current_schema() IS DISTINCT FROM 'public' THEN
        RAISE EXCEPTION 'receipt-worker''s objects live in schema public, but this session creates in %',
                        coalesce(current_schema(), '(no schema: search_path is empty)')
            USING HINT = 'apply it with search_path = public: SET search_path = public first, or remove the setting '
                         'that changed it (ALTER ROLE … RESET search_path, ALTER DATABASE … RESET search_path)';
    END IF;
    -- jsonb reads a \uXXXX escape of a character past ASCII (the worker's JSON escapes the C1 and bidirectional
    -- controls so) only in a UTF8 database.
    IF pg_catalog.current_setting('server_encoding') <> 'UTF8' THEN
        RAISE EXCEPTION 'the database''s encoding is %, and receipt-worker needs UTF8',
                        pg_catalog.current_setting('server_encoding')
            USING HINT = 'create its database with CREATE DATABASE … ENCODING ''UTF8'' TEMPLATE template0, and apply it there';
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS receipt_schema_migrations (
    version    text PRIMARY KEY,
    checksum   text,
    applied_at timestamptz NOT NULL DEFAULT now()
);

SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '001_schema') AS pending \gset
\if :pending
\ir migrations/001_schema.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '007_definitions_layout') AS pending \gset
\if :pending
\ir migrations/007_definitions_layout.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '008_transactions') AS pending \gset
\if :pending
\ir migrations/008_transactions.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '009_notifications') AS pending \gset
\if :pending
\ir migrations/009_notifications.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '010_ledger_job_link') AS pending \gset
\if :pending
\ir migrations/010_ledger_job_link.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '011_retention_indexes') AS pending \gset
\if :pending
\ir migrations/011_retention_indexes.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '012_security_settings') AS pending \gset
\if :pending
\ir migrations/012_security_settings.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '013_ledger_security') AS pending \gset
\if :pending
\ir migrations/013_ledger_security.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '014_test_environments') AS pending \gset
\if :pending
\ir migrations/014_test_environments.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '015_notification_forgeries_index') AS pending \gset
\if :pending
\ir migrations/015_notification_forgeries_index.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '016_refunds_revenue') AS pending \gset
\if :pending
\ir migrations/016_refunds_revenue.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '017_subscriptions') AS pending \gset
\if :pending
\ir migrations/017_subscriptions.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '018_ledger_chain_index') AS pending \gset
\if :pending
\ir migrations/018_ledger_chain_index.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '019_reconciliation') AS pending \gset
\if :pending
\ir migrations/019_reconciliation.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '020_subscription_plans') AS pending \gset
\if :pending
\ir migrations/020_subscription_plans.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '021_retention') AS pending \gset
\if :pending
\ir migrations/021_retention.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '022_reconciliation_indexes') AS pending \gset
\if :pending
\ir migrations/022_reconciliation_indexes.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '023_known_revocation_indexes') AS pending \gset
\if :pending
\ir migrations/023_known_revocation_indexes.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '024_lost_orders') AS pending \gset
\if :pending
\ir migrations/024_lost_orders.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '025_support_indexes') AS pending \gset
\if :pending
\ir migrations/025_support_indexes.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '026_renewal_extensions') AS pending \gset
\if :pending
\ir migrations/026_renewal_extensions.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '028_app_transactions_setup_checks') AS pending \gset
\if :pending
\ir migrations/028_app_transactions_setup_checks.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '029_signed_fields') AS pending \gset
\if :pending
\ir migrations/029_signed_fields.sql
\endif
SELECT NOT EXISTS (SELECT FROM receipt_schema_migrations WHERE version = '031_operator_view_indexes') AS pending \gset
\if :pending
\ir migrations/031_operator_view_indexes.sql
\endif

\ir functions/receipt_input_problem.sql
\ir functions/receipt_signed_input_problem.sql
\ir functions/receipt_enqueue.sql
\ir functions/enqueue_receipt.sql
\ir functions/enqueue_transaction.sql
\ir functions/enqueue_app_transaction.sql
\ir functions/mark_verdict_delivered.sql
\ir functions/receive_notification.sql
\ir functions/receipt_event.sql
\ir functions/mark_event_delivered.sql
\ir functions/receipt_claim.sql
\ir functions/receipt_renew_leases.sql
\ir functions/receipt_release.sql
\ir functions/receipt_credit_key.sql
\ir functions/receipt_known_revoked.sql
\ir functions/receipt_revocation_change.sql
\ir functions/receipt_revoke.sql
\ir functions/receipt_credit.sql
\ir functions/receipt_app_transaction_credit.sql
\ir functions/receipt_complete.sql
\ir functions/receipt_notification_claim.sql
\ir functions/receipt_notification_renew_leases.sql
\ir functions/receipt_refund_notification.sql
\ir functions/receipt_subscription_events.sql
\ir functions/receipt_subscription_write.sql
\ir functions/receipt_subscription_apply.sql
\ir functions/receipt_subscription_credited.sql
\ir functions/receipt_period_credit_insert.sql
\ir functions/receipt_subscription_refresh.sql
\ir functions/receipt_subscriptions_stale.sql
\ir functions/receipt_notification_revocation.sql
\ir functions/receipt_notification_period_credit.sql
\ir functions/receipt_announced_credit.sql
\ir functions/receipt_seen_credit.sql
\ir functions/receipt_account_token_register.sql
\ir functions/register_account_token.sql
\ir functions/expect_purchase.sql
\ir functions/claim_purchase.sql
\ir functions/receipt_notification_event.sql
\ir functions/receipt_period_extend.sql
\ir functions/receipt_renewal_extension_summary.sql
\ir functions/receipt_notification_apply.sql
\ir functions/receipt_notification_apply_batch.sql
\ir functions/receipt_notification_reject.sql
\ir functions/receipt_notification_release.sql
\ir functions/receipt_sweep.sql
\ir functions/receipt_prune.sql
\ir functions/receipt_requeue.sql
\ir functions/receipt_requeue_dead.sql
\ir functions/receipt_requeue_dead_notifications.sql
\ir functions/set_customer_consent.sql
\ir functions/record_consumption.sql
\ir functions/answer_refund_request.sql
\ir functions/receipt_refund_requests_due.sql
\ir functions/receipt_refund_request_result.sql
\ir functions/receipt_refund_recover.sql
\ir functions/receipt_refund_candidates.sql
\ir functions/receipt_country_alpha2.sql
\ir functions/receipt_reconcile.sql
\ir functions/receipt_reconciliation_claim.sql
\ir functions/receipt_reconciliation_finish.sql
\ir functions/receipt_renewal_extension_request.sql
\ir functions/receipt_renewal_extension_result.sql
\ir functions/receipt_notification_test_lookup.sql
\ir functions/receipt_notification_test_record.sql

\ir triggers/receipt_jobs_before_insert.sql
\ir triggers/receipt_jobs_notify_enqueued.sql
\ir triggers/receipt_jobs_notify_done.sql
\ir triggers/receipt_transactions_guard.sql
\ir triggers/receipt_jobs_unlink.sql
\ir triggers/receipt_revocations_guard.sql
\ir triggers/receipt_known_revocations_guard.sql
\ir triggers/receipt_transactions_price_check.sql

\ir views/receipt_queue_summary.sql
\ir views/receipt_jobs_stuck.sql
\ir views/receipt_failures.sql
\ir views/receipt_notifications_summary.sql
\ir views/receipt_entitlements.sql
\ir views/receipt_revenue.sql
\ir views/receipt_price_mismatches.sql
\ir views/receipt_refund_summary.sql
\ir views/receipt_retention.sql
\ir views/receipt_unclaimed_purchases.sql

-- PUBLIC may execute none of the functions above (roles.sql grants each role its own): see privileges.sql.
\ir privileges.sql
