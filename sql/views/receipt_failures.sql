-- The last 24 hours of rejections, dead letters and pending retries, grouped by reason and Apple status.
CREATE OR REPLACE VIEW receipt_failures AS
SELECT j.state,
       coalesce(j.reason, '-')                       AS reason,
       j.apple_status,
       count(*)                                      AS jobs,
       max(j.updated_at)                             AS last_seen,
       max(j.id)                                     AS latest_id,
       (array_agg(j.last_error ORDER BY j.updated_at DESC))[1] AS latest_error
FROM receipt_jobs j
WHERE j.state IN ('rejected', 'dead', 'retry') AND j.updated_at > now() - interval '24 hours'
GROUP BY j.state, j.reason, j.apple_status
ORDER BY jobs DESC, last_seen DESC;
