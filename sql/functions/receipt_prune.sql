-- Retention: clear the receipts and signed transactions of jobs finished more than p_clear_after ago (the hash stays), and delete
-- verified and rejected jobs finished more than p_delete_after ago whose verdict was delivered. Dead jobs and
-- undelivered verdicts are never deleted. Works in batches of p_batch rows so no lock is held for long; call until it returns 0.
-- The ledger is never pruned (its job_id becomes NULL).
-- Each query finds its rows through an index that holds only what is left to do (receipt_jobs_retained: finished
-- jobs whose receipt is still there; receipt_jobs_deletable: delivered verified and rejected jobs), so a call does
-- not read again the jobs it cleared before or must keep.
CREATE OR REPLACE FUNCTION receipt_prune(p_clear_after interval, p_delete_after interval, p_batch integer DEFAULT 5000)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_cleared integer;
    v_deleted integer;
BEGIN
    WITH batch AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.finished_at < now() - p_clear_after
          AND (j.receipt_data IS NOT NULL OR j.signed_transaction IS NOT NULL)
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    UPDATE receipt_jobs j SET receipt_data = NULL, signed_transaction = NULL FROM batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_cleared = ROW_COUNT;

    WITH batch AS (
        SELECT j.id FROM receipt_jobs j
        WHERE j.finished_at < now() - p_delete_after AND j.state IN ('verified', 'rejected')
          AND j.delivered_at IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM receipt_jobs j USING batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_cleared + v_deleted;
END $$;
