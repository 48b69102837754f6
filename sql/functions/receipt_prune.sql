-- Retention, in batches of p_batch rows per kind so no lock is held for long; call until it returns 0 (the rows
-- cleared and deleted by this call). Each kind has its own period; p_events_after, p_notifications_after and
-- p_refund_requests_after NULL take p_delete_after's.
--   jobs: the receipts and signed transactions of jobs finished more than p_clear_after ago are cleared (the hash
--         stays); verified and rejected jobs finished more than p_delete_after ago whose verdict was delivered are
--         deleted. Dead jobs and undelivered verdicts are never deleted. The ledger is never pruned (its job_id
--         becomes NULL).
--   events (receipt_events): delivered events created more than p_events_after ago are deleted; undelivered ones
--         stay, however old (the API layer has not acted on them).
--   notifications (receipt_notifications): applied, duplicate and rejected notifications finished more than
--         p_notifications_after ago are deleted, but never within 180 days: Apple's Notification History reaches that
--         far back, and a notification replayed from it after its row was gone would be applied again. Queued,
--         running, retrying and dead ones stay.
--         Forgeries (rejected, invalid_signature) go sooner, p_forgeries_after after they were rejected (7 days by
--         default; NULL: as other rejected ones): anyone can send them, so they must not fill the table for half a
--         year, and one sent again after its row is gone is only rejected again.
--   refund requests (receipt_refund_requests): answered, skipped and failed requests are deleted
--         p_refund_requests_after after Apple's deadline to answer them (respond_by), but never within 180 days: the
--         request's CONSUMPTION_REQUEST notification is kept that long (and a replay of it finds its row), and Apple's
--         decision on the refund (REFUND, REFUND_DECLINED) is recorded on the request beside exactly what was sent to
--         Apple, which a question about the refund (or a later REFUND_REVERSED) is answered from. Pending requests
--         stay.
--   unclaimed purchases (receipt_unclaimed): a purchase kept because nobody could be credited for it is deleted
--         once it was credited (claimed_at) as long ago as notifications are kept (180 days at least): the
--         notification that brought it is gone by then. One still waiting for its customer stays, however old.
--   consumption records (receipt_consumption): deleted once unchanged for as long (the same period, 180 days at
--         least) and no refund request of their transaction is kept. Customers' consents (receipt_customer_consents)
--         are never deleted: a consent is a standing choice, and deleting it would answer that customer's next
--         request as "no consent".
-- Each query finds its rows through an index that holds only what is left to do (receipt_jobs_retained,
-- receipt_jobs_deletable, receipt_events_delivered, receipt_notifications_finished, receipt_notifications_forgeries,
-- receipt_refund_requests_settled, receipt_consumption_updated, receipt_unclaimed_claimed), so a call does not read again the rows it cleared
-- before or must keep. The view receipt_retention says the same per kind, with the oldest row each may delete.
-- SECURITY DEFINER (search_path = pg_catalog, public, pg_temp): the worker's role runs retention without rights to
-- delete notifications, events, refund requests or consumption records itself.
-- The periods of events, notifications and refund requests came in issue 25; the four-argument form goes (its calls
-- now resolve to this one).
DROP FUNCTION IF EXISTS receipt_prune(interval, interval, integer);
DROP FUNCTION IF EXISTS receipt_prune(interval, interval, integer, interval);

CREATE OR REPLACE FUNCTION receipt_prune(
    p_clear_after interval, p_delete_after interval, p_batch integer DEFAULT 5000,
    p_forgeries_after interval DEFAULT interval '7 days',
    p_events_after interval DEFAULT NULL, p_notifications_after interval DEFAULT NULL,
    p_refund_requests_after interval DEFAULT NULL
)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_floor           constant interval := interval '180 days';
    v_events_before   timestamptz := pg_catalog.now() - coalesce(p_events_after, p_delete_after);
    v_notes_before    timestamptz := pg_catalog.now()
                                     - greatest(coalesce(p_notifications_after, p_delete_after), v_floor);
    v_refunds_before  timestamptz := pg_catalog.now()
                                     - greatest(coalesce(p_refund_requests_after, p_delete_after), v_floor);
    v_cleared         integer;
    v_deleted         integer;
    v_events          integer;
    v_notifications   integer;
    v_forgeries       integer;
    v_refund_requests integer;
    v_consumption     integer;
    v_unclaimed       integer;
BEGIN
    WITH batch AS (
        SELECT j.id FROM public.receipt_jobs j
        WHERE j.finished_at < pg_catalog.now() - p_clear_after
          AND (j.receipt_data IS NOT NULL OR j.signed_transaction IS NOT NULL)
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    UPDATE public.receipt_jobs j SET receipt_data = NULL, signed_transaction = NULL FROM batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_cleared = ROW_COUNT;

    WITH batch AS (
        SELECT j.id FROM public.receipt_jobs j
        WHERE j.finished_at < pg_catalog.now() - p_delete_after AND j.state IN ('verified', 'rejected')
          AND j.delivered_at IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_jobs j USING batch WHERE j.id = batch.id;
    GET DIAGNOSTICS v_deleted = ROW_COUNT;

    WITH batch AS (
        SELECT e.id FROM public.receipt_events e
        WHERE e.created_at < v_events_before AND e.delivered_at IS NOT NULL
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_events e USING batch WHERE e.id = batch.id;
    GET DIAGNOSTICS v_events = ROW_COUNT;

    WITH batch AS (
        SELECT n.id FROM public.receipt_notifications n
        WHERE n.finished_at < v_notes_before AND n.state IN ('applied', 'duplicate', 'rejected')
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_notifications n USING batch WHERE n.id = batch.id;
    GET DIAGNOSTICS v_notifications = ROW_COUNT;

    WITH batch AS (
        SELECT n.id FROM public.receipt_notifications n
        WHERE n.finished_at < pg_catalog.now() - p_forgeries_after
          AND n.state = 'rejected' AND n.reason = 'invalid_signature'
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_notifications n USING batch WHERE n.id = batch.id;
    GET DIAGNOSTICS v_forgeries = ROW_COUNT;

    WITH batch AS (
        SELECT r.id FROM public.receipt_refund_requests r
        WHERE r.respond_by < v_refunds_before AND r.state <> 'pending'
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_refund_requests r USING batch WHERE r.id = batch.id;
    GET DIAGNOSTICS v_refund_requests = ROW_COUNT;

    WITH batch AS (
        SELECT c.transaction_id FROM public.receipt_consumption c
        WHERE c.updated_at < v_refunds_before
          AND NOT EXISTS (SELECT FROM public.receipt_refund_requests r WHERE r.transaction_id = c.transaction_id)
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_consumption c USING batch WHERE c.transaction_id = batch.transaction_id;
    GET DIAGNOSTICS v_consumption = ROW_COUNT;

    -- Purchases kept unclaimed that were credited since (issue 37): with the notifications that brought them.
    WITH batch AS (
        SELECT u.id FROM public.receipt_unclaimed u
        WHERE u.claimed_at < v_notes_before
        LIMIT p_batch FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.receipt_unclaimed u USING batch WHERE u.id = batch.id;
    GET DIAGNOSTICS v_unclaimed = ROW_COUNT;

    RETURN v_cleared + v_deleted + v_events + v_notifications + v_forgeries + v_refund_requests + v_consumption
           + v_unclaimed;
END $$;
