-- Lost orders (issue 37): a purchase reaches the service three ways, and whatever arrives first credits it once.
--   the app sends it          enqueue_receipt(), enqueue_transaction()                 (as before)
--   Apple announces it        a verified notification whose transaction carries an appAccountToken
--   support claims it         claim_purchase()
-- What this adds to the schema:
--   receipt_account_tokens    whose appAccountToken is whose (register_account_token(), expect_purchase())
--   receipt_jobs.kind         'expected': an order made before the purchase sheet opens (expect_purchase()), queued
--                             with run_at at its deadline and never claimed by a worker: a purchase credits it, or
--                             receipt_sweep() rejects it not_purchased once the deadline passes;
--                             'announced' and 'claimed': an order the service made for a purchase no order named
--                             (order id apple:<transactionId>), verified from the start
--   receipt_unclaimed         a verified purchase nobody could be credited for yet (no token, or a token nobody
--                             registered): kept until its token is registered or support claims it

ALTER TABLE receipt_jobs DROP CONSTRAINT IF EXISTS receipt_jobs_kind_check;
ALTER TABLE receipt_jobs ADD CONSTRAINT receipt_jobs_kind_check
    CHECK (kind IN ('receipt', 'signed_transaction', 'transaction_id', 'expected', 'announced', 'claimed')) NOT VALID;
ALTER TABLE receipt_jobs VALIDATE CONSTRAINT receipt_jobs_kind_check;

-- The open jobs a purchase Apple announced may complete (receipt_announced_credit()): the app's copy naming its
-- transaction, or an order for its token. Partial: a job has entries only while open, and only when it names one.
CREATE INDEX receipt_jobs_open_token ON receipt_jobs (app_account_token)
    WHERE app_account_token IS NOT NULL AND state IN ('queued', 'running', 'retry');
CREATE INDEX receipt_jobs_open_transaction ON receipt_jobs (transaction_id)
    WHERE transaction_id IS NOT NULL AND state IN ('queued', 'running', 'retry');

-- Expected orders whose deadline has come (receipt_sweep() rejects them not_purchased), apart from claimable work.
CREATE INDEX receipt_jobs_expected_due ON receipt_jobs (run_at) WHERE state = 'queued' AND kind = 'expected';

CREATE TABLE receipt_account_tokens (
    app_account_token uuid PRIMARY KEY,
    user_id           text NOT NULL CHECK (user_id <> '' AND octet_length(user_id) <= 1000),
    bundle_id         text,                    -- NULL: the token stands for the customer in every app of ours
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_account_tokens_user ON receipt_account_tokens (user_id);

CREATE TABLE receipt_unclaimed (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment             text NOT NULL,
    bundle_id               text NOT NULL,
    product_id              text NOT NULL,
    transaction_id          text NOT NULL,
    original_transaction_id text NOT NULL,
    app_account_token       uuid,
    purchase_date           timestamptz,
    price                   numeric,          -- currency units, as the ledger keeps them
    currency                text,
    source                  text NOT NULL,    -- notification
    notification_id         bigint,
    purchase                jsonb NOT NULL,   -- the transaction as the worker wrote it (NotificationOutcome), to credit
    signed_at               timestamptz,
    note                    text,             -- why nobody was credited: no token, an unknown token, ...
    rules                   jsonb,            -- the workers' crediting rules it was seen under (family, sandbox)
    first_seen              timestamptz NOT NULL DEFAULT now(),
    claimed_at              timestamptz,      -- when it was credited (a registered token, a claim, the app's copy)
    ledger_id               bigint,
    UNIQUE (environment, transaction_id)
);
CREATE INDEX receipt_unclaimed_token ON receipt_unclaimed (app_account_token) WHERE claimed_at IS NULL;
CREATE INDEX receipt_unclaimed_open ON receipt_unclaimed (first_seen) WHERE claimed_at IS NULL;

-- receipt_period_credit_insert() takes the order and job a credit is for (sql/functions/ creates the new one).
DROP FUNCTION IF EXISTS receipt_period_credit_insert(text, text, text, jsonb, text, bigint, timestamptz);

INSERT INTO receipt_schema_migrations (version) VALUES ('024_lost_orders') ON CONFLICT DO NOTHING;
