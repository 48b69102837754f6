-- For the API layer: the app's own answer to Apple's pending refund request about `transaction_id` (the newest one
-- still pending). It wins over the policy (receipt_products.refund_preference) when given before the policy answers,
-- CONSUMPTION_ANSWER_AFTER_MINUTES after the request arrived; `work` sends it.
--   delivery_status          DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE,
--                            UNDELIVERED_OTHER
--   refund_preference        DECLINE, GRANT_FULL, GRANT_PRORATED (any case)
--   consumption_percentage   milliunits, 0 to 100000; not sent for auto-renewable subscriptions; NULL: what
--                            record_consumption() recorded, if anything
-- Returns the request's id; raises when no request about the transaction is pending.
CREATE OR REPLACE FUNCTION answer_refund_request(
    transaction_id text, delivery_status text, refund_preference text, consumption_percentage integer DEFAULT NULL,
    sample_content_provided boolean DEFAULT false
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_delivery   text := pg_catalog.upper(answer_refund_request.delivery_status);
    v_preference text := pg_catalog.upper(answer_refund_request.refund_preference);
    v_id         bigint;
BEGIN
    IF v_delivery IS NULL OR v_delivery NOT IN ('DELIVERED', 'UNDELIVERED_QUALITY_ISSUE', 'UNDELIVERED_WRONG_ITEM',
                                                'UNDELIVERED_SERVER_OUTAGE', 'UNDELIVERED_OTHER') THEN
        RAISE EXCEPTION 'answer_refund_request: delivery_status is one of DELIVERED, UNDELIVERED_QUALITY_ISSUE, '
                        'UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE, UNDELIVERED_OTHER, got %',
                        coalesce(pg_catalog.left(answer_refund_request.delivery_status, 40), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_preference IS NULL OR v_preference NOT IN ('DECLINE', 'GRANT_FULL', 'GRANT_PRORATED') THEN
        RAISE EXCEPTION 'answer_refund_request: refund_preference is one of DECLINE, GRANT_FULL, GRANT_PRORATED, got %',
                        coalesce(pg_catalog.left(answer_refund_request.refund_preference, 40), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF answer_refund_request.consumption_percentage NOT BETWEEN 0 AND 100000 THEN
        RAISE EXCEPTION 'answer_refund_request: consumption_percentage is in milliunits, 0 to 100000, got %',
                        answer_refund_request.consumption_percentage
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE public.receipt_refund_requests r
    SET app_answer = pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
            'deliveryStatus', v_delivery, 'refundPreference', v_preference,
            'consumptionPercentage', answer_refund_request.consumption_percentage,
            'sampleContentProvided', coalesce(answer_refund_request.sample_content_provided, false))),
        app_answered_at = pg_catalog.now(),
        -- Due at once unless a worker already took the request (attempts > 0): then it is held while being sent,
        -- or waits out a retry; releasing it would have a second worker send a second answer to Apple.
        next_attempt_at = CASE WHEN r.attempts = 0 THEN pg_catalog.now() ELSE r.next_attempt_at END
    WHERE r.id = (SELECT q.id FROM public.receipt_refund_requests q
                  WHERE q.transaction_id = answer_refund_request.transaction_id AND q.state = 'pending'
                  ORDER BY q.id DESC LIMIT 1)
    RETURNING r.id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'answer_refund_request: no refund request about transaction % is pending',
                        coalesce(pg_catalog.left(answer_refund_request.transaction_id, 64), 'NULL')
            USING ERRCODE = 'no_data_found',
                  HINT = 'a request is pending from its CONSUMPTION_REQUEST notification until it is answered, '
                         'skipped or failed (receipt_refund_requests.state)';
    END IF;
    RETURN v_id;
END $$;
