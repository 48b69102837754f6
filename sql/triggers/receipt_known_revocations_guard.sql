-- What is known of revocations is append-only: entries are never changed or removed (a newer one supersedes).
CREATE OR REPLACE FUNCTION receipt_known_revocations_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'receipt_known_revocations is append-only: what Apple said of a revocation is never changed'
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE OR REPLACE TRIGGER receipt_known_revocations_guard BEFORE UPDATE OR DELETE ON receipt_known_revocations
    FOR EACH ROW EXECUTE FUNCTION receipt_known_revocations_guard();
CREATE OR REPLACE TRIGGER receipt_known_revocations_no_truncate BEFORE TRUNCATE ON receipt_known_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_known_revocations_guard();
