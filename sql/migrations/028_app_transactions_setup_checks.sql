-- App transactions and the notifications set-up check (issue 38).
--   receipt_jobs.kind           'app_transaction': StoreKit's AppTransaction.shared as the app sent it
--                               (enqueue_app_transaction()), verified by a worker like a signed transaction
--   receipt_app_transactions    one row per app transaction credited: the app's original purchase (what paid-to-free
--                               migrations grant from), at most one per (environment, app_transaction_id), ever
--   receipt_notification_tests  each run of `receipt-worker notifications test`: passed, or the step that failed

ALTER TABLE receipt_jobs DROP CONSTRAINT IF EXISTS receipt_jobs_kind_check;
ALTER TABLE receipt_jobs ADD CONSTRAINT receipt_jobs_kind_check
    CHECK (kind IN ('receipt', 'signed_transaction', 'transaction_id', 'expected', 'announced', 'claimed',
                    'app_transaction')) NOT VALID;
ALTER TABLE receipt_jobs VALIDATE CONSTRAINT receipt_jobs_kind_check;

CREATE TABLE receipt_app_transactions (
    id                           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment                  text NOT NULL,
    app_transaction_id           text NOT NULL,
    bundle_id                    text NOT NULL,
    app_apple_id                 bigint,
    user_id                      text NOT NULL,
    order_id                     text NOT NULL,
    job_id                       bigint,        -- the job that credited it (retention may delete the job later)
    original_application_version text,
    original_purchase_date       timestamptz,
    original_platform            text,          -- iOS, macOS, tvOS, visionOS
    application_version          text,          -- the version the app runs now, when it was signed
    preorder_date                timestamptz,
    receipt_creation_date        timestamptz,   -- when the App Store signed it
    credited_at                  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (environment, app_transaction_id)
);
CREATE INDEX receipt_app_transactions_user ON receipt_app_transactions USING hash (user_id);

CREATE TABLE receipt_notification_tests (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment             text NOT NULL,
    bundle_id               text NOT NULL,
    test_notification_token text,
    started_at              timestamptz NOT NULL,
    finished_at             timestamptz NOT NULL DEFAULT now(),
    -- passed, or the step that failed: apple_refused, apple_unavailable, not_delivered, not_stored, not_applied
    result                  text NOT NULL CHECK (result IN ('passed', 'apple_refused', 'apple_unavailable',
                                                            'not_delivered', 'not_stored', 'not_applied')),
    send_attempt_result     text,             -- Apple's sendAttemptResult (SUCCESS, TIMED_OUT, ...), when known
    notification_id         bigint,           -- the TEST notification's row in receipt_notifications, when stored
    detail                  text,
    run_by                  text NOT NULL DEFAULT session_user
);
CREATE INDEX receipt_notification_tests_latest ON receipt_notification_tests (finished_at);

INSERT INTO receipt_schema_migrations (version) VALUES ('028_app_transactions_setup_checks') ON CONFLICT DO NOTHING;
