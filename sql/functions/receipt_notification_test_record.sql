-- `receipt-worker notifications test` records each run here (`receipt-worker status` shows the last pass and the
-- last failure): p_result is passed or the step that failed (apple_refused, apple_unavailable, not_delivered,
-- not_stored, not_applied). Returns the row's id. run_by is the session's login.
-- SECURITY DEFINER: operators insert through this only.
CREATE OR REPLACE FUNCTION receipt_notification_test_record(
    p_environment         text,
    p_bundle_id           text,
    p_token               text,
    p_started_at          timestamptz,
    p_result              text,
    p_send_attempt_result text,
    p_notification_id     bigint,
    p_detail              text
) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    INSERT INTO receipt_notification_tests (environment, bundle_id, test_notification_token, started_at, result,
                                            send_attempt_result, notification_id, detail)
    VALUES (p_environment, p_bundle_id, pg_catalog.left(p_token, 200), p_started_at, p_result,
            pg_catalog.left(p_send_attempt_result, 100), p_notification_id, pg_catalog.left(p_detail, 2000))
    RETURNING id
$$;
