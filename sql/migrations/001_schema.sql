-- receipt-worker schema: the job table, the ledger, the product catalog and the apps served.
-- Tables and indexes only; the functions, triggers and views that work on them live in sql/functions, sql/triggers
-- and sql/views. Applied once, in the order of sql/apply.sql, by `receipt-worker migrate` or by hand with
-- `psql -v ON_ERROR_STOP=1 -1 -f sql/apply.sql`.

CREATE TABLE IF NOT EXISTS receipt_schema_migrations (
    version    text PRIMARY KEY,
    checksum   text,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- The apps (bundle ids) this service verifies for. `receipt-worker migrate` and `work` register APPLE_BUNDLE_IDS.
CREATE TABLE receipt_apps (
    bundle_id  text PRIMARY KEY CHECK (bundle_id <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Optional catalog: how a product is credited. Products not listed are credited per transaction_id.
--   non_consumable: once per original_transaction_id (a restore cannot pay again)
--   auto_renewable: once per web_order_line_item_id (one credit per subscription period, restores included)
CREATE TABLE receipt_products (
    product_id text PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('consumable', 'non_consumable', 'auto_renewable', 'non_renewing')),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per verification request.
CREATE TABLE receipt_jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state            text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'verified', 'rejected', 'retry', 'dead')),
    bundle_id        text NOT NULL,
    order_id         text NOT NULL,
    user_id          text NOT NULL,
    product_id       text NOT NULL,          -- what the order sold, from the API layer's order record
    transaction_id   text,                   -- as the client reported it, optional
    order_created_at timestamptz,            -- when the order was made, optional
    receipt_data     text,                   -- cleared by retention; receipt_hash stays
    receipt_hash     text,                   -- hex SHA-256 of receipt_data, set on insert
    receipt_bytes    integer,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer,                -- NULL: the workers' MAX_ATTEMPTS
    run_at           timestamptz NOT NULL DEFAULT now(),
    locked_by        text,
    lease_token      uuid,
    lease_until      timestamptz,
    rescues          integer NOT NULL DEFAULT 0,
    last_error       text,
    apple_status     integer,
    environment      text,                   -- Production | Sandbox, as Apple verified it
    reason           text,
    result           jsonb,                  -- the verdict for the API layer (never latest_receipt)
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,            -- set when state becomes verified, rejected or dead
    delivered_at     timestamptz,            -- set by mark_verdict_delivered()
    CHECK (order_id <> '' AND user_id <> '' AND product_id <> '')
) WITH (
    fillfactor = 70,                          -- room for HOT updates: a job is updated several times
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

-- Idempotent enqueue: one open (or verified) job per order and app. Backs enqueue_receipt() without a race.
CREATE UNIQUE INDEX receipt_jobs_open_order ON receipt_jobs (bundle_id, order_id)
    WHERE state IN ('queued', 'running', 'retry', 'verified');
-- What workers claim, in order.
CREATE INDEX receipt_jobs_claimable ON receipt_jobs (run_at, id) WHERE state = 'queued';
-- What the scheduler looks at.
CREATE INDEX receipt_jobs_retry ON receipt_jobs (run_at) WHERE state = 'retry';
CREATE INDEX receipt_jobs_running ON receipt_jobs (lease_until) WHERE state = 'running';
-- Verdicts the API layer has not taken yet.
CREATE INDEX receipt_jobs_undelivered ON receipt_jobs (finished_at)
    WHERE finished_at IS NOT NULL AND delivered_at IS NULL;
-- Retention and failure reports.
CREATE INDEX receipt_jobs_finished ON receipt_jobs (finished_at) WHERE finished_at IS NOT NULL;

-- The ledger: one row per credited purchase, kept forever. Append-only (see the trigger below).
CREATE TABLE receipt_transactions (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment             text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    credit_key              text NOT NULL,   -- transaction_id, original_transaction_id or 'wol:' || web_order_line_item_id
    transaction_id          text NOT NULL,
    original_transaction_id text NOT NULL,
    web_order_line_item_id  text,
    product_id              text NOT NULL,
    quantity                integer NOT NULL DEFAULT 1,
    bundle_id               text NOT NULL,
    order_id                text NOT NULL,
    user_id                 text NOT NULL,
    job_id                  bigint REFERENCES receipt_jobs (id) ON DELETE SET NULL,
    purchase_date           timestamptz,
    expires_date            timestamptz,
    credited_at             timestamptz NOT NULL DEFAULT now(),
    revoked_at              timestamptz,
    revocation_reason       text,
    UNIQUE (environment, credit_key)
);
CREATE INDEX receipt_transactions_job ON receipt_transactions (job_id);
CREATE INDEX receipt_transactions_transaction ON receipt_transactions (environment, transaction_id);
CREATE INDEX receipt_transactions_order ON receipt_transactions (bundle_id, order_id);

-- A purchase chain (original_transaction_id) belongs to the first user it was credited for.
CREATE TABLE receipt_purchase_owners (
    environment             text NOT NULL,
    original_transaction_id text NOT NULL,
    user_id                 text NOT NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (environment, original_transaction_id)
);

-- What operators did (requeues), and when.
CREATE TABLE receipt_admin_log (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    actor    text NOT NULL DEFAULT session_user,
    action   text NOT NULL,
    job_id   bigint,
    detail   text
);

INSERT INTO receipt_schema_migrations (version) VALUES ('001_schema') ON CONFLICT DO NOTHING;
