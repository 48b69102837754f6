-- Records a change to whether a credited purchase is revoked (receipt_revocations, append-only) and brings the ledger
-- row's revoked_at and revocation_reason to the newest entry by Apple's date (signed_at, then the order recorded).
-- An entry older than the newest one is kept in the history but changes nothing: a late REFUND cannot undo a newer
-- REFUND_REVERSED. Returns true when the ledger row's state changed (the caller then records an event).
CREATE OR REPLACE FUNCTION receipt_revocation_change(
    p_ledger_id bigint, p_action text, p_effective_at timestamptz, p_reason text, p_signed_at timestamptz,
    p_source text, p_job_id bigint DEFAULT NULL, p_notification_id bigint DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_newest receipt_revocations;
    v_was_revoked boolean;
BEGIN
    SELECT revoked_at IS NOT NULL INTO v_was_revoked FROM receipt_transactions WHERE id = p_ledger_id FOR UPDATE;
    INSERT INTO receipt_revocations (ledger_id, action, effective_at, reason, signed_at, source, job_id,
                                     notification_id)
    VALUES (p_ledger_id, p_action, CASE WHEN p_action = 'revoked' THEN coalesce(p_effective_at, p_signed_at) END,
            p_reason, p_signed_at, p_source, p_job_id, p_notification_id);
    SELECT * INTO v_newest FROM receipt_revocations
    WHERE ledger_id = p_ledger_id ORDER BY signed_at DESC, id DESC LIMIT 1;
    UPDATE receipt_transactions
    SET revoked_at = CASE WHEN v_newest.action = 'revoked' THEN v_newest.effective_at END,
        revocation_reason = CASE WHEN v_newest.action = 'revoked' THEN v_newest.reason END
    WHERE id = p_ledger_id
      AND (revoked_at, revocation_reason) IS DISTINCT FROM
          (CASE WHEN v_newest.action = 'revoked' THEN v_newest.effective_at END,
           CASE WHEN v_newest.action = 'revoked' THEN v_newest.reason END);
    RETURN v_was_revoked IS DISTINCT FROM (v_newest.action = 'revoked');
END $$;
