-- For `work`: the pending refund requests whose answer is due, with the answer to send (Send Consumption Information
-- v2's body, exactly as it will be sent and then recorded in receipt_refund_requests.answer). Each returned request is
-- held for p_hold_seconds (next_attempt_at) while it is sent; receipt_refund_request_result() says how it went.
-- A request is due when the app answered (answer_refund_request()), or p_answer_after_minutes after it arrived
-- (CONSUMPTION_ANSWER_AFTER_MINUTES), when the product's policy (receipt_products.refund_preference) answers.
-- Decided here instead, and not returned:
--   skipped  no_consent: the customer did not consent (set_customer_consent()), or the purchase's owner is unknown;
--            no_policy: the app did not answer and the product has no refund_preference;
--            expired: respond_by passed before anything was sent
--   failed   respond_by passed after attempts that failed
-- The answer: customerConsented (true), deliveryStatus (the app's, else DELIVERED when the purchase is credited and
-- its verdict delivered, UNDELIVERED_OTHER otherwise), refundPreference, consumptionPercentage (the app's, else
-- record_consumption()'s; never for auto-renewable subscriptions; 0 for a purchase not DELIVERED, as Apple requires),
-- sampleContentProvided. Only what Apple accepts is sent: a GRANT_PRORATED that Apple would refuse (a product not an
-- auto-renewable subscription with no consumption recorded, one of 0 or 100000, or not DELIVERED; the policy's, or
-- an app's whose recorded consumption changed since) is sent without a refundPreference, the rest of the answer
-- informing Apple's decision; `answer` records what was sent.
CREATE OR REPLACE FUNCTION receipt_refund_requests_due(p_limit integer, p_answer_after_minutes integer,
                                                       p_hold_seconds integer DEFAULT 120)
RETURNS TABLE (id bigint, environment text, bundle_id text, transaction_id text, respond_by timestamptz,
               answer text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH picked AS (
        SELECT r.* FROM receipt_refund_requests r
        WHERE r.state = 'pending' AND r.next_attempt_at <= now()
          AND (r.app_answer IS NOT NULL OR r.received_at + make_interval(mins => p_answer_after_minutes) <= now()
               OR r.respond_by <= now())
        ORDER BY r.next_attempt_at, r.id
        LIMIT p_limit
        FOR UPDATE OF r SKIP LOCKED
    ), judged AS (
        SELECT p.id,
               CASE WHEN p.respond_by <= now() THEN CASE WHEN p.attempts > 0 THEN 'failed' ELSE 'expired' END
                    WHEN NOT coalesce((SELECT c.consented FROM receipt_customer_consents c
                                       WHERE c.user_id = p.user_id), false) THEN 'no_consent'
                    WHEN p.app_answer IS NULL AND pr.refund_preference IS NULL THEN 'no_policy'
               END AS verdict,
               jsonb_strip_nulls(jsonb_build_object(
                   'customerConsented', true,
                   'deliveryStatus', a.delivery,
                   'refundPreference', CASE WHEN a.preference = 'GRANT_PRORATED' AND a.percentage_allowed
                                                 AND (a.delivery <> 'DELIVERED' OR a.used IS NULL
                                                      OR a.used NOT BETWEEN 1 AND 99999)
                                            THEN NULL ELSE a.preference END,
                   'consumptionPercentage', CASE WHEN NOT a.percentage_allowed OR a.used IS NULL THEN NULL
                                                 WHEN a.delivery <> 'DELIVERED' THEN 0 ELSE a.used END,
                   'sampleContentProvided', coalesce((p.app_answer->>'sampleContentProvided')::boolean, false)))
                   AS answer
        FROM picked p
        LEFT JOIN receipt_products pr ON pr.product_id = p.product_id
        CROSS JOIN LATERAL (
            SELECT coalesce(p.app_answer->>'deliveryStatus',
                       CASE WHEN EXISTS (SELECT 1 FROM receipt_transactions t
                                         LEFT JOIN receipt_jobs j ON j.id = t.job_id
                                         WHERE t.environment = p.environment AND t.transaction_id = p.transaction_id
                                           AND (t.job_id IS NULL OR j.delivered_at IS NOT NULL))
                            THEN 'DELIVERED' ELSE 'UNDELIVERED_OTHER' END) AS delivery,
                   coalesce(p.app_answer->>'refundPreference', upper(pr.refund_preference)) AS preference,
                   coalesce((p.app_answer->>'consumptionPercentage')::integer,
                            (SELECT c.consumption_percentage FROM receipt_consumption c
                             WHERE c.transaction_id = p.transaction_id)) AS used,
                   -- Apple computes an auto-renewable subscription's consumption itself, and refuses one sent.
                   pr.kind IS DISTINCT FROM 'auto_renewable' AS percentage_allowed
        ) a
    ), settled AS (
        UPDATE receipt_refund_requests r
        SET state = CASE WHEN j.verdict = 'failed' THEN 'failed' ELSE 'skipped' END,
            skip_reason = CASE WHEN j.verdict = 'failed' THEN NULL ELSE j.verdict END,
            last_error = CASE WHEN j.verdict = 'failed'
                              THEN coalesce(r.last_error || '; ', '') || 'respond_by passed' ELSE r.last_error END
        FROM judged j
        WHERE r.id = j.id AND j.verdict IS NOT NULL
        RETURNING r.id
    ), held AS (
        UPDATE receipt_refund_requests r
        SET attempts = r.attempts + 1, next_attempt_at = now() + make_interval(secs => p_hold_seconds)
        FROM judged j
        WHERE r.id = j.id AND j.verdict IS NULL
        RETURNING r.id, r.environment, r.bundle_id, r.transaction_id, r.respond_by, j.answer
    )
    SELECT h.id, h.environment, h.bundle_id, h.transaction_id, h.respond_by, h.answer::text FROM held h
    ORDER BY h.id;
END $$;
