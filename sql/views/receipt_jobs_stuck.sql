-- Jobs an operator should look at: which job, which order, how long, how many tries, what Apple said last.
CREATE OR REPLACE VIEW receipt_jobs_stuck AS
SELECT j.id,
       CASE
           WHEN j.state = 'running' AND j.lease_until < now() THEN 'lease expired'
           WHEN j.state = 'queued' AND j.run_at < now() - interval '5 minutes' THEN 'queued too long'
           WHEN j.state = 'retry' AND j.attempts >= 5 THEN 'retrying many times'
           WHEN j.state = 'dead' THEN 'dead'
       END                                           AS problem,
       j.state,
       j.bundle_id,
       j.order_id,
       j.user_id,
       j.product_id,
       date_trunc('second', now() - j.created_at)   AS age,
       j.attempts,
       j.max_attempts,
       j.rescues,
       j.apple_status,
       j.last_error,
       j.run_at,
       j.locked_by,
       j.lease_until,
       j.created_at
FROM receipt_jobs j
WHERE (j.state = 'running' AND j.lease_until < now())
   OR (j.state = 'queued' AND j.run_at < now() - interval '5 minutes')
   OR (j.state = 'retry' AND j.attempts >= 5)
   OR j.state = 'dead'
ORDER BY j.created_at;
