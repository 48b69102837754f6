-- Functions, triggers and views live in files of their own (sql/functions, sql/triggers, sql/views), each holding its
-- one current definition, applied after the migrations and again whenever the file changes. Migrations hold schema.
--
-- A database set up before this layout had 002_enqueue to 006_write_path applied, which created those objects
-- along with the schema (their checksums are in accepted-checksums.txt). What they left behind that the current
-- definitions no longer use, or define with other parameter names, goes here; on a new database these are no-ops.

-- Which definition files were applied, with the checksum of each (`receipt-worker migrate` skips unchanged ones).
CREATE TABLE IF NOT EXISTS receipt_schema_definitions (
    name       text PRIMARY KEY,              -- the file, relative to sql/ (functions/receipt_claim.sql)
    checksum   text NOT NULL,                 -- hex SHA-256 of the file
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- The one-by-one crediting path and the guard's row type, replaced by the set-based receipt_credit().
DROP FUNCTION IF EXISTS receipt_credit(jsonb, receipt_jobs);
DROP TYPE IF EXISTS receipt_written_job;
-- The credit key now takes the product's kind, not its id (the callers join the catalog): new parameter names.
DROP FUNCTION IF EXISTS receipt_credit_key(text, text, text, text);

-- One verified job offered to receipt_credit(), and how far crediting it has got.
CREATE TYPE receipt_credit_request AS (
    ord         integer,   -- the caller's position for the job
    job_id      bigint,
    bundle_id   text,
    order_id    text,
    user_id     text,
    environment text,      -- Production | Sandbox
    candidates  jsonb,     -- the purchases it may be credited with, in the order to try them
    next        integer,   -- the candidate to try next (0-based)
    saw_owner   boolean    -- a candidate was passed over because its chain belongs to another user
);

INSERT INTO receipt_schema_migrations (version) VALUES ('007_definitions_layout') ON CONFLICT DO NOTHING;
