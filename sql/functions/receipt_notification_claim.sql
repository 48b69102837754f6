-- Claims notifications to verify and apply: queued ones, retries that are due, and running ones whose lease expired
-- (their worker died), oldest first; SKIP LOCKED, so workers never wait for each other. Each claim counts as an
-- attempt. A running one whose lease expired on its p_max_attempts-th claim is set aside instead (`dead`,
-- `retries_exhausted`): a payload that ends every worker that processes it must not be handed to the next one forever.
--
-- The signature took p_max_attempts in issue 22; the three-argument form, which re-claimed without a bound, goes.
DROP FUNCTION IF EXISTS receipt_notification_claim(text, integer, double precision);

CREATE OR REPLACE FUNCTION receipt_notification_claim(
    p_worker text, p_limit integer, p_lease_seconds double precision, p_max_attempts integer
)
RETURNS TABLE (id bigint, lease_token uuid, signed_payload text, attempts integer)
LANGUAGE sql AS $$
    WITH due AS (
        SELECT n.id, n.state = 'running' AND n.attempts >= p_max_attempts AS exhausted FROM receipt_notifications n
        WHERE (n.state IN ('queued', 'retry') AND n.run_at <= now())
           OR (n.state = 'running' AND n.lease_until < now())
        ORDER BY n.run_at, n.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), set_aside AS (
        UPDATE receipt_notifications n
        SET state = 'dead', reason = 'retries_exhausted', finished_at = now(),
            last_error = format('set aside after %s claims: the worker processing it ended (crash or kill) '
                                || 'before writing an outcome, last worker %s', n.attempts, n.locked_by)
                         || coalesce('; before: ' || n.last_error, ''),
            locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
        FROM due
        WHERE n.id = due.id AND due.exhausted
    )
    UPDATE receipt_notifications n
    SET state = 'running', attempts = n.attempts + 1, locked_by = p_worker, lease_token = gen_random_uuid(),
        lease_until = now() + make_interval(secs => p_lease_seconds), updated_at = now(),
        last_error = CASE WHEN n.state = 'running' THEN
                         format('lease expired: worker %s stopped answering (claim %s)', n.locked_by, n.attempts)
                         || coalesce('; before: ' || n.last_error, '')
                     ELSE n.last_error END
    FROM due
    WHERE n.id = due.id AND NOT due.exhausted
    RETURNING n.id, n.lease_token, n.signed_payload, n.attempts
$$;
