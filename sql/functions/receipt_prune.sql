-- Retention, in batches of p_batch rows per kind so no lock is held for long; call until it returns 0 (the rows
-- cleared and deleted by this call):
--   jobs: the receipts and signed transactions of jobs finished more than p_clear_after ago are cleared (the hash
--         stays); verified and rejected jobs finished more than p_delete_after ago whose verdict was delivered are
--         deleted. Dead jobs and undelivered verdicts are never deleted. The ledger is never pruned (its job_id
--         becomes NULL).
--   events (receipt_events): delivered events created more than p_delete_after ago are deleted; undelivered ones
--         stay.
--   notifications (receipt_notifications): applied, duplicate and rejected notifications finished more than
--         p_delete_after ago are deleted, but never within 180 days: Apple's Notification History reaches that far
--         back, and a notification replayed from it after its row was gone would be applied again. Dead ones stay.
--         Forgeries (rejected, invalid_signature) go sooner, p_forgeries_after after they were rejected (7 days by
--         default; NULL: as other rejected ones): anyone can send them, so they must not fill the table for half a
--         year, and one sent again after its row is gone is only rejected again.
-- Each query finds its rows through an index that holds only what is left to do (receipt_jobs_retained,
-- receipt_jobs_deletable, receipt_events_delivered, receipt_notifications_finished, receipt_notifications_forgeries),
-- so a call does not read again the rows it cleared before or must keep.
-- SECURITY DEFINER (search_path = pg_catalog, public, pg_temp): the worker's role runs retention without rights to
-- delete notifications or events itself.
-- p_forgeries_after came in issue 22; the three-argument form goes (its calls now resolve to this one).
DROP FUNCTION IF EXISTS receipt_prune(interval, interval, integer);

CREATE OR REPLACE FUNCTION receipt_prune(
    p_clear_after interval, p_delete_after interval, p_batch integer DEFAULT 5000,
    p_forgeries_after interval DEFAULT interval '7 days'
)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_cleared       integer;
    v_deleted       integer;
    v_events        integer;
    v_notifications integer;
    v_forgeries     integer;
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

    WITH batch AS (
        SELECT e.id FROM receipt_events e
        WHERE e.created_at < now() - p_delete_after AND e.delivered_at IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM receipt_events e USING batch WHERE e.id = batch.id;
    GET DIAGNOSTICS v_events = ROW_COUNT;

    WITH batch AS (
        SELECT n.id FROM receipt_notifications n
        WHERE n.finished_at < now() - greatest(p_delete_after, interval '180 days')
          AND n.state IN ('applied', 'duplicate', 'rejected')
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM receipt_notifications n USING batch WHERE n.id = batch.id;
    GET DIAGNOSTICS v_notifications = ROW_COUNT;

    WITH batch AS (
        SELECT n.id FROM receipt_notifications n
        WHERE n.finished_at < now() - p_forgeries_after
          AND n.state = 'rejected' AND n.reason = 'invalid_signature'
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM receipt_notifications n USING batch WHERE n.id = batch.id;
    GET DIAGNOSTICS v_forgeries = ROW_COUNT;

    RETURN v_cleared + v_deleted + v_events + v_notifications + v_forgeries;
END $$;
