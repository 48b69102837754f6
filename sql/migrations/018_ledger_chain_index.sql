-- A purchase chain's ledger rows (environment, original_transaction_id): receipt_entitlements reads the latest period
-- of each of one user's subscription chains through it, and the notification and refresh paths find a chain's rows
-- by it, instead of reading the whole ledger.
CREATE INDEX IF NOT EXISTS receipt_transactions_chain ON receipt_transactions (environment, original_transaction_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('018_ledger_chain_index') ON CONFLICT DO NOTHING;
