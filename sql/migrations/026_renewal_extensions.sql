-- Renewal-date extensions (issue 38).
--   receipt_renewal_extensions   each request `receipt-worker extend-renewal` sends to Apple (Extend a Subscription
--                                Renewal Date for one purchase chain, Extend Subscription Renewal Dates for All
--                                Active Subscribers of a product): its request id, who asked and when, what, and
--                                Apple's answer; a mass request is completed by its status or by Apple's
--                                RENEWAL_EXTENSION SUMMARY notification. Written only through
--                                receipt_renewal_extension_request() and receipt_renewal_extension_result().
--   receipt_period_extensions    each move of a ledger period's expires_date by a RENEWAL_EXTENDED notification: the
--                                ledger stays append-only (receipt_transactions_guard() lets expires_date change only
--                                to the newest entry here for the row).
CREATE TABLE IF NOT EXISTS receipt_renewal_extensions (
    request_identifier       text PRIMARY KEY,        -- the UUID sent to Apple as requestIdentifier
    scope                    text NOT NULL CHECK (scope IN ('one', 'mass')),
    environment              text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    bundle_id                text NOT NULL,
    original_transaction_id  text,                    -- scope one
    product_id               text,                    -- scope mass
    storefront_country_codes text[],                  -- scope mass: NULL, every storefront
    extend_by_days           integer NOT NULL CHECK (extend_by_days BETWEEN 1 AND 90),
    extend_reason_code       integer NOT NULL CHECK (extend_reason_code BETWEEN 0 AND 3),
    requested_by             text NOT NULL,           -- the database login that asked (session_user)
    requested_at             timestamptz NOT NULL DEFAULT now(),
    state                    text NOT NULL DEFAULT 'sending'
                             CHECK (state IN ('sending', 'unanswered', 'refused', 'extended', 'failed', 'pending',
                                              'complete')),
    effective_at             timestamptz,             -- scope one: Apple's effectiveDate
    web_order_line_item_id   text,                    -- scope one: the period Apple extended
    succeeded_count          bigint,                  -- scope mass
    failed_count             bigint,
    completed_at             timestamptz,
    error                    text,
    summary_notification_id  bigint,                  -- the RENEWAL_EXTENSION SUMMARY that completed it
    updated_at               timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'one') = (original_transaction_id IS NOT NULL)),
    CHECK (scope = 'one' OR product_id IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS receipt_renewal_extensions_chain ON receipt_renewal_extensions (original_transaction_id)
    WHERE original_transaction_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS receipt_period_extensions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ledger_id       bigint NOT NULL REFERENCES receipt_transactions (id),
    expires_before  timestamptz,
    expires_after   timestamptz NOT NULL,
    notification_id bigint,
    signed_at       timestamptz NOT NULL,                -- Apple's signedDate of the notification
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS receipt_period_extensions_ledger ON receipt_period_extensions (ledger_id, id);

INSERT INTO receipt_schema_migrations (version) VALUES ('026_renewal_extensions') ON CONFLICT DO NOTHING;
