-- The ledger is append-only: only the revocation columns may change (once), and job_id may be cleared when
-- retention deletes the job (ON DELETE SET NULL).
CREATE OR REPLACE FUNCTION receipt_transactions_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: credited purchases are never deleted'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF (to_jsonb(NEW) - 'revoked_at' - 'revocation_reason' - 'job_id')
       IS DISTINCT FROM (to_jsonb(OLD) - 'revoked_at' - 'revocation_reason' - 'job_id')
       OR (NEW.job_id IS DISTINCT FROM OLD.job_id AND NEW.job_id IS NOT NULL)
       OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at) THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: only revoked_at and revocation_reason may be set'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER receipt_transactions_guard BEFORE UPDATE OR DELETE ON receipt_transactions
    FOR EACH ROW EXECUTE FUNCTION receipt_transactions_guard();
CREATE OR REPLACE TRIGGER receipt_transactions_no_truncate BEFORE TRUNCATE ON receipt_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_transactions_guard();
