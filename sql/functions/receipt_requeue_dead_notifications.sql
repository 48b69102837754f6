-- Put every dead App Store Server Notification back in the queue with fresh attempts (after the cause is fixed:
-- usually Apple's OCSP responders unreachable for longer than the attempts lasted). A replay from Notification
-- History cannot do it: it brings the same bytes, which are the same row. Each is recorded in receipt_admin_log
-- (action requeue_notification, the notification's id and last error in detail). Returns how many were requeued.
-- SECURITY DEFINER: operators need EXECUTE, not write rights on receipt_notifications.
CREATE OR REPLACE FUNCTION receipt_requeue_dead_notifications(p_note text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_count integer;
BEGIN
    WITH requeued AS (
        UPDATE receipt_notifications n
        SET state = 'queued', attempts = 0, run_at = pg_catalog.now(), reason = NULL, finished_at = NULL,
            updated_at = pg_catalog.now()
        FROM (SELECT d.id, d.attempts, d.last_error FROM receipt_notifications d WHERE d.state = 'dead'
              FOR UPDATE) AS before
        WHERE n.id = before.id
        RETURNING n.id, before.attempts, before.last_error
    ), logged AS (
        INSERT INTO receipt_admin_log (action, detail)
        SELECT 'requeue_notification',
               pg_catalog.format('notification %s was dead (%s attempts): %s%s', r.id, r.attempts,
                                 coalesce(r.last_error, '-'), coalesce('; note: ' || p_note, ''))
        FROM requeued r
        RETURNING 1
    )
    SELECT pg_catalog.count(*) INTO v_count FROM logged;
    RETURN v_count;   -- the workers' notification loops take them within a scheduler interval
END $$;
