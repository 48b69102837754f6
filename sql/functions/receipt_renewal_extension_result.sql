-- What Apple answered to a renewal-date extension recorded by receipt_renewal_extension_request() (issue 38), written
-- by `receipt-worker extend-renewal`: p_state 'extended' or 'failed' (one chain: Apple's success, effectiveDate and
-- webOrderLineItemId), 'pending' or 'complete' (mass: accepted, or Apple's status says complete with its counts),
-- 'refused' (Apple refused the request: p_error), 'unanswered' (no answer after the retries: p_error). A request
-- that is complete (by its status, or by Apple's RENEWAL_EXTENSION SUMMARY notification) stays complete, its counts
-- kept. Returns the row's state after, NULL when no request has that id.
-- SECURITY DEFINER, like receipt_renewal_extension_request().
CREATE OR REPLACE FUNCTION receipt_renewal_extension_result(
    p_request_identifier text, p_state text, p_error text DEFAULT NULL, p_effective_at timestamptz DEFAULT NULL,
    p_web_order_line_item_id text DEFAULT NULL, p_succeeded bigint DEFAULT NULL, p_failed bigint DEFAULT NULL,
    p_completed_at timestamptz DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_state text;
BEGIN
    IF p_state NOT IN ('extended', 'failed', 'pending', 'complete', 'refused', 'unanswered') THEN
        RAISE EXCEPTION 'receipt_renewal_extension_result: % is not a result', p_state USING ERRCODE = '22023';
    END IF;
    UPDATE receipt_renewal_extensions r
    SET state = CASE WHEN r.state = 'complete' THEN r.state ELSE p_state END,
        error = CASE WHEN r.state = 'complete' THEN r.error ELSE p_error END,
        effective_at = coalesce(p_effective_at, r.effective_at),
        web_order_line_item_id = coalesce(p_web_order_line_item_id, r.web_order_line_item_id),
        succeeded_count = CASE WHEN r.state = 'complete' THEN r.succeeded_count
                               ELSE coalesce(p_succeeded, r.succeeded_count) END,
        failed_count = CASE WHEN r.state = 'complete' THEN r.failed_count ELSE coalesce(p_failed, r.failed_count) END,
        completed_at = CASE WHEN r.state = 'complete' THEN r.completed_at
                            WHEN p_state = 'complete' THEN coalesce(p_completed_at, now()) END,
        updated_at = now()
    WHERE r.request_identifier = p_request_identifier
    RETURNING r.state INTO v_state;
    RETURN v_state;
END $$;
