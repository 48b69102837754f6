-- Reconciliation of the ledger with Apple's daily Sales Summary report (issue 26, docs/reconciliation.md).
--
-- receipt_products.sku: the SKU Apple's report names the product by, when it is not the product id itself (for
-- in-app purchases Apple reports the product id; set this where a product's SKU differs). One product per SKU.
ALTER TABLE receipt_products ADD COLUMN sku text CHECK (sku <> '');
CREATE UNIQUE INDEX receipt_products_sku ON receipt_products (sku) WHERE sku IS NOT NULL;

-- One comparison of a report day with the ledger (receipt_reconcile()).
CREATE TABLE receipt_reconciliations (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    report_date  date NOT NULL,                      -- Apple's day (Pacific Time)
    source       text NOT NULL CHECK (source IN ('file', 'api')),
    window_start timestamptz NOT NULL,               -- the ledger's window: the report day in America/Los_Angeles
    window_end   timestamptz NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    apple_rows   integer NOT NULL,                   -- Apple's in-app purchase lines of the day
    ledger_rows  integer NOT NULL,                   -- Production credits and revocations in the window
    differences  integer NOT NULL,                   -- rows of receipt_reconciliation_lines
    run_by       text NOT NULL DEFAULT session_user  -- the login that ran it (a worker's or an operator's)
);
CREATE INDEX receipt_reconciliations_date ON receipt_reconciliations (report_date, id);

-- The differences of a run, one per (product, country, currency, customer price), or per product where the ledger
-- does not know a credit's country or price (apps' receipts carry neither): then country, currency and price are NULL.
CREATE TABLE receipt_reconciliation_lines (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id         bigint NOT NULL REFERENCES receipt_reconciliations (id) ON DELETE CASCADE,
    kind           text NOT NULL
                   CHECK (kind IN ('missing_in_ledger', 'missing_in_report', 'unit_mismatch', 'price_mismatch')),
    product_id     text,
    sku            text,
    country        text,                             -- ISO 3166-1 alpha-2, as Apple's report gives it
    currency       text,                             -- ISO 4217: the customer's currency
    customer_price numeric,                          -- per unit, as Apple reports it (the ledger's, for ledger-only lines)
    expected_price numeric,                          -- price_mismatch: the price list's, else the ledger's
    apple_units    bigint NOT NULL DEFAULT 0,        -- net of refunds (negative units)
    ledger_units   bigint NOT NULL DEFAULT 0         -- credits minus revocations
);
CREATE INDEX receipt_reconciliation_lines_run ON receipt_reconciliation_lines (run_id);

-- `work`'s own reconciliation (RECONCILE_AT): one row per report day, so that the day is reconciled once whatever
-- the number of workers and restarts (receipt_reconciliation_claim(), receipt_reconciliation_finish()).
CREATE TABLE receipt_reconciliation_schedule (
    report_date     date PRIMARY KEY,
    state           text NOT NULL CHECK (state IN ('running', 'waiting', 'done', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    locked_by       text,                            -- the worker holding the day (state running)
    lease_until     timestamptz,
    next_attempt_at timestamptz,                     -- waiting: Apple's report not ready yet, or a failure
    run_id          bigint REFERENCES receipt_reconciliations (id) ON DELETE SET NULL,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

INSERT INTO receipt_schema_migrations (version) VALUES ('019_reconciliation') ON CONFLICT DO NOTHING;
