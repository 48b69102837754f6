-- Apple's refund requests (CONSUMPTION_REQUEST) per product and month (UTC) of arrival: how many came, how many were
-- answered, skipped and failed, and what Apple decided (refunded, declined; the rest: not told yet).
CREATE OR REPLACE VIEW receipt_refund_summary AS
SELECT r.product_id, date_trunc('month', r.received_at AT TIME ZONE 'UTC')::date AS month, r.environment,
       count(*) AS requests,
       count(*) FILTER (WHERE r.state = 'answered') AS answered,
       count(*) FILTER (WHERE r.state = 'skipped') AS skipped,
       count(*) FILTER (WHERE r.state = 'failed') AS failed,
       count(*) FILTER (WHERE r.state = 'pending') AS pending,
       count(*) FILTER (WHERE r.outcome = 'refunded') AS refunded,
       count(*) FILTER (WHERE r.outcome = 'declined') AS declined
FROM receipt_refund_requests r
GROUP BY 1, 2, 3;
