-- The input limits of enqueue_receipt() and enqueue_transaction() move from the caller's session to a table only the
-- owner can read and write. They were read with current_setting('receipt_worker.max_…'), which any caller could
-- change with SET in its own session (a receipt_api role could then store receipts of any size).
--
-- receipt_settings: one row per setting, named as the setting was; no role but the owner has a right on it
-- (deploy/sql/roles.sql grants none). A missing row means the default. The owner changes a limit with
--   UPDATE receipt_settings SET value = '2097152' WHERE name = 'receipt_worker.max_receipt_bytes';
-- Limits (names ending in _bytes) are positive whole numbers.
CREATE TABLE IF NOT EXISTS receipt_settings (
    name       text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT receipt_settings_bytes CHECK (name NOT LIKE '%\_bytes' OR value ~ '^[1-9][0-9]{0,17}$')
);
REVOKE ALL ON receipt_settings FROM PUBLIC;

-- The defaults, or what the database (or the migrating role) had set with ALTER DATABASE … SET / ALTER ROLE … SET,
-- so a limit raised that way before this migration stays raised.
INSERT INTO receipt_settings (name, value)
SELECT s.name, CASE WHEN current_setting(s.name, true) ~ '^[1-9][0-9]{0,17}$' THEN current_setting(s.name, true)
                    ELSE s.fallback END
FROM (VALUES ('receipt_worker.max_receipt_bytes', '1048576'),
             ('receipt_worker.max_signed_transaction_bytes', '65536')) AS s(name, fallback)
ON CONFLICT (name) DO NOTHING;

INSERT INTO receipt_schema_migrations (version) VALUES ('012_security_settings') ON CONFLICT DO NOTHING;
