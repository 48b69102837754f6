-- StoreKit 2: a job verifies a receipt, a signed transaction (the JWS of Transaction.jwsRepresentation), or a
-- transaction id looked up through the App Store Server API. Same table, states, idempotency and delivery.

ALTER TABLE receipt_jobs
    ADD COLUMN kind text NOT NULL DEFAULT 'receipt'
        CHECK (kind IN ('receipt', 'signed_transaction', 'transaction_id')),
    ADD COLUMN signed_transaction text,       -- the JWS as the app sent it; cleared by retention like receipt_data
    ADD COLUMN app_account_token uuid;        -- the order's appAccountToken, when the app set one

COMMENT ON COLUMN receipt_jobs.receipt_hash IS 'hex SHA-256 of the input (receipt_data or signed_transaction)';

-- receipt_claim() returns the new columns: its row type changes, so the old definition goes (the current one in
-- sql/functions/receipt_claim.sql is created right after the migrations). deploy/sql/roles.sql grants it again.
DROP FUNCTION IF EXISTS receipt_claim(text, integer, double precision);

INSERT INTO receipt_schema_migrations (version) VALUES ('008_transactions') ON CONFLICT DO NOTHING;
