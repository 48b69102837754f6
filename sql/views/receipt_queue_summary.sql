-- Count and oldest age per state.
CREATE OR REPLACE VIEW receipt_queue_summary AS
SELECT s.state,
       count(j.id)                                   AS jobs,
       min(j.created_at)                             AS oldest_created_at,
       date_trunc('second', now() - min(j.created_at)) AS oldest_age,
       min(j.run_at) FILTER (WHERE j.state IN ('queued', 'retry')) AS next_run_at,
       count(j.id) FILTER (WHERE j.finished_at IS NOT NULL AND j.delivered_at IS NULL) AS undelivered
FROM (VALUES (1, 'queued'), (2, 'running'), (3, 'retry'), (4, 'verified'), (5, 'rejected'), (6, 'dead'),
             (7, 'expected'))
         AS s(position, state)
-- 'expected': orders waiting for their purchase until a deadline (expect_purchase(), issue 37), in receipt_jobs as
-- queued but no work for a worker: counted apart, so that queued stays what the workers have to do.
LEFT JOIN receipt_jobs j ON CASE WHEN j.state = 'queued' AND j.kind = 'expected' THEN 'expected' ELSE j.state END
                            = s.state
GROUP BY s.position, s.state
ORDER BY s.position;
