-- Writes back, in one statement, notifications a worker rejected before reading anything they say: a signature or
-- certificate chain that does not hold, a payload that is not a notification (reason invalid_signature). Each under
-- its own lease (p_lease_tokens[i]); one whose lease is no longer the caller's is left alone. Returns the ids
-- rejected. The same columns as receipt_notification_apply()'s rejection; a flood of forgeries costs a statement per
-- batch. (A rejection that carries what the payload says, sandbox_not_allowed, goes through
-- receipt_notification_apply().)
CREATE OR REPLACE FUNCTION receipt_notification_reject(
    p_ids bigint[], p_lease_tokens uuid[], p_reasons text[], p_errors text[]
)
RETURNS SETOF bigint
LANGUAGE sql AS $$
    UPDATE receipt_notifications n
    SET state = 'rejected', reason = coalesce(r.reason, 'invalid_signature'), last_error = nullif(r.error, ''),
        finished_at = now(), locked_by = NULL, lease_token = NULL, lease_until = NULL, updated_at = now()
    FROM unnest(p_ids, p_lease_tokens, p_reasons, p_errors) AS r(id, token, reason, error)
    WHERE n.id = r.id AND n.state = 'running' AND n.lease_token = r.token
    RETURNING n.id
$$;
