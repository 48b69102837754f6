-- `work`'s own reconciliation (RECONCILE_AT): whether this worker reconciles a report day now, and which.
--
-- p_at: the time of day, in Apple's zone (America/Los_Angeles, the zone of the report days), from which yesterday's
-- report is reconciled. Returns yesterday's date (Pacific Time) when it is past p_at there and the day is not done, not
-- held by another worker's lease, not waiting for its next attempt, and has had fewer than p_max_attempts attempts
-- (the day is then held for p_lease_seconds, and attempts counts one more); else NULL. Claims take an advisory lock
-- (transaction-scoped), so two workers deciding at once see each other's row; receipt_reconciliation_schedule keeps
-- the day's state across restarts, so a day is reconciled once. The dates come from the database's clock.
CREATE OR REPLACE FUNCTION receipt_reconciliation_claim(
    p_at time, p_worker text, p_lease_seconds double precision, p_max_attempts integer
) RETURNS date
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_local timestamp := pg_catalog.now() AT TIME ZONE 'America/Los_Angeles';
    v_day   date;
    v_row   receipt_reconciliation_schedule;
BEGIN
    IF v_local::time < p_at THEN
        RETURN NULL;
    END IF;
    v_day := v_local::date - 1;
    -- "reconcil" in ASCII: one key for every claim.
    PERFORM pg_catalog.pg_advisory_xact_lock(8243104023216089452);
    -- FOR UPDATE: a finish of this day not committed yet (it takes no advisory lock) is waited for, and its row, not
    -- the one before it, is the one decided on; so a day done while it was being claimed is not taken again.
    SELECT * INTO v_row FROM receipt_reconciliation_schedule s WHERE s.report_date = v_day FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO receipt_reconciliation_schedule (report_date, state, attempts, locked_by, lease_until)
        VALUES (v_day, 'running', 1, p_worker,
                pg_catalog.now() + pg_catalog.make_interval(secs => p_lease_seconds));
        RETURN v_day;
    END IF;
    IF v_row.state IN ('done', 'failed')
       OR (v_row.state = 'running' AND v_row.lease_until > pg_catalog.now())
       OR (v_row.state = 'waiting' AND v_row.next_attempt_at > pg_catalog.now()) THEN
        RETURN NULL;
    END IF;
    IF v_row.attempts >= p_max_attempts THEN
        UPDATE receipt_reconciliation_schedule s
        SET state = 'failed', locked_by = NULL, lease_until = NULL, updated_at = pg_catalog.now()
        WHERE s.report_date = v_day AND s.state = v_row.state AND s.attempts = v_row.attempts;
        RETURN NULL;
    END IF;
    UPDATE receipt_reconciliation_schedule s
    SET state = 'running', attempts = s.attempts + 1, locked_by = p_worker,
        lease_until = pg_catalog.now() + pg_catalog.make_interval(secs => p_lease_seconds),
        next_attempt_at = NULL, updated_at = pg_catalog.now()
    -- And only the row as read: the state, attempts and lease it was decided on.
    WHERE s.report_date = v_day AND s.state = v_row.state AND s.attempts = v_row.attempts
      AND s.lease_until IS NOT DISTINCT FROM v_row.lease_until;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN v_day;
END $$;
