-- The ledger is append-only: only the revocation columns may change, and only to what the newest entry of the row's
-- revocation history (receipt_revocations) says, so no change is made that the history does not keep; job_id may be
-- cleared when retention deletes the job (ON DELETE SET NULL). revocation_type and revocation_percentage (how much of
-- the purchase Apple refunded: a REFUND_PRORATED leaves the credit in place) are set from REFUND notifications.
-- expires_date may move only to what the newest entry of the row's extension history (receipt_period_extensions,
-- written by receipt_period_extend() for a RENEWAL_EXTENDED notification) says.
CREATE OR REPLACE FUNCTION receipt_transactions_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_newest receipt_revocations;
    v_extended timestamptz;
BEGIN
    IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: credited purchases are never deleted'
            USING ERRCODE = 'restrict_violation';
    END IF;
    -- pg_catalog.to_jsonb: this fires inside receipt_jobs_unlink() (SECURITY DEFINER), where a to_jsonb() taking
    -- exactly receipt_transactions, planted in another schema, would otherwise win over the polymorphic built-in.
    IF (pg_catalog.to_jsonb(NEW) - 'revoked_at' - 'revocation_reason' - 'job_id' - 'revocation_type'
        - 'revocation_percentage' - 'expires_date')
       IS DISTINCT FROM (pg_catalog.to_jsonb(OLD) - 'revoked_at' - 'revocation_reason' - 'job_id' - 'revocation_type'
                         - 'revocation_percentage' - 'expires_date')
       OR (NEW.job_id IS DISTINCT FROM OLD.job_id AND NEW.job_id IS NOT NULL) THEN
        RAISE EXCEPTION 'receipt_transactions is append-only: only revoked_at, revocation_reason, revocation_type and '
                        'revocation_percentage may be set'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.expires_date IS DISTINCT FROM OLD.expires_date THEN
        SELECT e.expires_after INTO v_extended FROM receipt_period_extensions e
        WHERE e.ledger_id = NEW.id ORDER BY e.id DESC LIMIT 1;
        IF v_extended IS NULL OR NEW.expires_date IS DISTINCT FROM v_extended THEN
            RAISE EXCEPTION 'receipt_transactions: expires_date is moved through receipt_period_extend(), which '
                            'records it in receipt_period_extensions'
                USING ERRCODE = 'restrict_violation';
        END IF;
    END IF;
    IF (NEW.revoked_at, NEW.revocation_reason) IS DISTINCT FROM (OLD.revoked_at, OLD.revocation_reason) THEN
        SELECT * INTO v_newest FROM receipt_revocations
        WHERE ledger_id = NEW.id ORDER BY signed_at DESC, id DESC LIMIT 1;
        IF NOT FOUND
           OR (NEW.revoked_at, NEW.revocation_reason) IS DISTINCT FROM
              (CASE WHEN v_newest.action = 'revoked' THEN v_newest.effective_at END,
               CASE WHEN v_newest.action = 'revoked' THEN v_newest.reason END) THEN
            RAISE EXCEPTION 'receipt_transactions: a revocation is changed through receipt_revocation_change(), '
                            'which records it in receipt_revocations'
                USING ERRCODE = 'restrict_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER receipt_transactions_guard BEFORE UPDATE OR DELETE ON receipt_transactions
    FOR EACH ROW EXECUTE FUNCTION receipt_transactions_guard();
CREATE OR REPLACE TRIGGER receipt_transactions_no_truncate BEFORE TRUNCATE ON receipt_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION receipt_transactions_guard();
