-- App Store Server Notifications per state, for operators: how many, the oldest received, the next retry, the last
-- error; and the events (receipt_events) the API layer has not taken yet, on a line of their own.
CREATE OR REPLACE VIEW receipt_notifications_summary AS
SELECT n.state, count(*) AS notifications, now() - min(n.received_at) AS oldest_age,
       min(n.run_at) FILTER (WHERE n.state = 'retry') AS next_run_at,
       (array_agg(n.last_error ORDER BY n.updated_at DESC) FILTER (WHERE n.last_error IS NOT NULL))[1] AS latest_error
FROM receipt_notifications n
GROUP BY n.state
UNION ALL
SELECT 'events undelivered', count(*), now() - min(e.created_at), NULL, NULL
FROM receipt_events e
WHERE e.delivered_at IS NULL;
