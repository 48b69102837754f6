-- Count and oldest age per state.
CREATE OR REPLACE VIEW receipt_queue_summary AS
SELECT s.state,
       count(j.id)                                   AS jobs,
       min(j.created_at)                             AS oldest_created_at,
       date_trunc('second', now() - min(j.created_at)) AS oldest_age,
       min(j.run_at) FILTER (WHERE j.state IN ('queued', 'retry')) AS next_run_at,
       count(j.id) FILTER (WHERE j.finished_at IS NOT NULL AND j.delivered_at IS NULL) AS undelivered
FROM (VALUES (1, 'queued'), (2, 'running'), (3, 'retry'), (4, 'verified'), (5, 'rejected'), (6, 'dead'))
         AS s(position, state)
LEFT JOIN receipt_jobs j ON j.state = s.state
GROUP BY s.position, s.state
ORDER BY s.position;
