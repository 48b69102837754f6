-- For `work`: how sending one refund request's answer went (p_outcome):
--   answered   Apple accepted it: p_answer (exactly the body sent) is recorded, with answered_at
--   retry      a 5xx, a 429 or a timeout: tried again p_retry_in_seconds later while respond_by allows, else failed
--   failed     Apple refused it (another 4xx), or no further attempt fits before respond_by
-- p_error never holds customer data (the worker writes the operation, the status and Apple's error code).
-- Returns the request's new state.
CREATE OR REPLACE FUNCTION receipt_refund_request_result(p_id bigint, p_outcome text, p_answer text DEFAULT NULL,
                                                         p_error text DEFAULT NULL,
                                                         p_retry_in_seconds double precision DEFAULT 60)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
BEGIN
    IF p_outcome NOT IN ('answered', 'retry', 'failed') THEN
        RAISE EXCEPTION 'receipt_refund_request_result: outcome is answered, retry or failed, got %', p_outcome;
    END IF;
    UPDATE receipt_refund_requests r
    SET state = CASE WHEN p_outcome = 'answered' THEN 'answered'
                     WHEN p_outcome = 'retry'
                          AND now() + make_interval(secs => greatest(p_retry_in_seconds, 0)) < r.respond_by
                         THEN 'pending'
                     ELSE 'failed' END,
        answer = CASE WHEN p_outcome = 'answered' THEN p_answer::jsonb ELSE r.answer END,
        answered_at = CASE WHEN p_outcome = 'answered' THEN now() ELSE r.answered_at END,
        next_attempt_at = now() + make_interval(secs => greatest(p_retry_in_seconds, 0)),
        last_error = CASE WHEN p_outcome = 'answered' THEN r.last_error ELSE p_error END
    WHERE r.id = p_id AND r.state = 'pending'
    RETURNING r.state INTO v_state;
    RETURN coalesce(v_state, 'lost');
END $$;
