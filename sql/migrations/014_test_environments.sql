-- Xcode and StoreKit local-testing purchases (accepted only with APPSTORE_ALLOW_TEST_ENVIRONMENTS=on, for
-- development) are credited under their own environment, Xcode or LocalTesting, never as Sandbox: they can neither
-- take a Sandbox or Production credit key nor find a row of those environments to revoke.
ALTER TABLE receipt_transactions DROP CONSTRAINT receipt_transactions_environment_check;
ALTER TABLE receipt_transactions ADD CONSTRAINT receipt_transactions_environment_check
    CHECK (environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting'));

INSERT INTO receipt_schema_migrations (version) VALUES ('014_test_environments') ON CONFLICT DO NOTHING;
