-- For the API layer: the app's own answer to Apple's pending refund request about `transaction_id` (the newest one
-- still pending). It wins over the policy (receipt_products.refund_preference) when given before the policy answers,
-- CONSUMPTION_ANSWER_AFTER_MINUTES after the request arrived; `work` sends it.
--   delivery_status          DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE,
--                            UNDELIVERED_OTHER
--   refund_preference        DECLINE, GRANT_FULL, GRANT_PRORATED (any case)
--   consumption_percentage   milliunits, 0 to 100000; not sent for auto-renewable subscriptions; NULL: what
--                            record_consumption() recorded, if anything
-- Only what Apple accepts (Send Consumption Information v2) is taken; for a product that is not an auto-renewable
-- subscription in receipt_products (whose consumption Apple computes itself):
--   GRANT_PRORATED needs a consumption percentage, given or recorded, above 0 and below 100000 (Apple refuses it
--   otherwise), and so a DELIVERED purchase;
--   a purchase not DELIVERED was consumed 0: any other percentage given is refused.
-- Refused answers raise invalid_parameter_value with what to give instead (GRANT_FULL or DECLINE, a percentage, or
-- record_consumption() first).
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
    v_kind       text;
    v_used       integer;
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
    SELECT q.id, p.kind,
           coalesce(answer_refund_request.consumption_percentage,
                    (SELECT c.consumption_percentage FROM public.receipt_consumption c
                     WHERE c.transaction_id = q.transaction_id))
    INTO v_id, v_kind, v_used
    FROM public.receipt_refund_requests q
    LEFT JOIN public.receipt_products p ON p.product_id = q.product_id
    WHERE q.transaction_id = answer_refund_request.transaction_id AND q.state = 'pending'
    ORDER BY q.id DESC LIMIT 1;
    IF v_id IS NOT NULL AND v_kind IS DISTINCT FROM 'auto_renewable' THEN
        IF v_delivery <> 'DELIVERED' AND answer_refund_request.consumption_percentage <> 0 THEN
            RAISE EXCEPTION 'answer_refund_request: a purchase that is % was consumed 0, got consumption_percentage %',
                            v_delivery, answer_refund_request.consumption_percentage
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Apple refuses another percentage when deliveryStatus is not DELIVERED: give 0 or NULL';
        END IF;
        IF v_preference = 'GRANT_PRORATED' AND (v_delivery <> 'DELIVERED' OR v_used IS NULL
                                                OR v_used NOT BETWEEN 1 AND 99999) THEN
            RAISE EXCEPTION 'answer_refund_request: GRANT_PRORATED needs a DELIVERED purchase and a consumption '
                            'percentage above 0 and below 100000 milliunits, got % and %',
                            v_delivery, coalesce(v_used::text, 'none given or recorded')
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Apple refuses GRANT_PRORATED otherwise: give consumption_percentage (or call '
                             'record_consumption() first), or answer GRANT_FULL or DECLINE';
        END IF;
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
    WHERE r.id = v_id AND r.state = 'pending'
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
