-- The ledger's rows of one of Apple's report days (receipt_reconcile(), docs/reconciliation.md): its Production
-- credits by the day of the sale (the purchase date, else the credit's date) and its Production revocations by the
-- day of the refund, so that a reconciliation reads that day's rows instead of the whole ledger, three times.
CREATE INDEX IF NOT EXISTS receipt_transactions_sale_day
    ON receipt_transactions ((coalesce(purchase_date, credited_at))) WHERE environment = 'Production';
CREATE INDEX IF NOT EXISTS receipt_transactions_refund_day
    ON receipt_transactions (revoked_at) WHERE environment = 'Production' AND revoked_at IS NOT NULL;

INSERT INTO receipt_schema_migrations (version) VALUES ('022_reconciliation_indexes') ON CONFLICT DO NOTHING;
