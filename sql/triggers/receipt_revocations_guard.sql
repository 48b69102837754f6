-- The revocation history is append-only: entries are never changed or removed.
CREATE OR REPLACE FUNCTION receipt_revocations_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'receipt_revocations is append-only: the history of revocations is never changed'
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE OR REPLACE TRIGGER receipt_revocations_guard BEFORE UPDATE OR DELETE ON receipt_revocations
    FOR EACH ROW EXECUTE FUNCTION receipt_revocations_guard();
CREATE OR REPLACE TRIGGER receipt_revocations_no_truncate BEFORE TRUNCATE ON receipt_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_revocations_guard();
