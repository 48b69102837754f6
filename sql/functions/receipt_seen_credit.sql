-- Lost orders (issue 37), the third source: the purchases a verified answer of Apple's showed beside a job's own (a
-- receipt's other purchases, a transaction history's), which the worker offers after writing the job's verdict
-- (JobOutcome.seen: those carrying an appAccountToken, not cancelled, made at most 30 days before the order, at most
-- 20, newest first). p_job: the job whose answer showed them; p_source: 'receipt' or 'transaction' (the job's kind);
-- p_purchases: the purchases as receipt_complete()'s candidates, each with its app_account_token; p_rules: as for a
-- notification (receipt_announced_credit()).
--
-- One statement keeps the common case cheap: a purchase whose credit key is in the ledger (the customer's earlier
-- orders, credited by their own jobs) costs one probe of the ledger's unique index and nothing more. Each other one
-- goes to receipt_announced_credit(), which credits it to its token's customer exactly once, under the locks every
-- copy of a purchase takes, if the token was registered before the purchase was made; a purchase whose token nobody
-- registered (or registered later) is left alone: Apple's notification keeps it unclaimed for a registration or a
-- claim to credit, and a purchase made before the service knew its customer may have been credited by the system it
-- replaced.
--
-- Runs with its caller's rights (the worker's, which read the ledger); receipt_announced_credit() runs with its
-- owner's. Returns one row per purchase looked at (those the ledger lacked).
CREATE OR REPLACE FUNCTION receipt_seen_credit(
    p_job bigint, p_env text, p_bundle text, p_source text, p_purchases jsonb, p_rules jsonb DEFAULT NULL
) RETURNS TABLE (transaction_id text, ledger_id bigint, job_id bigint, note text)
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_purchase jsonb;
BEGIN
    IF p_source NOT IN ('receipt', 'transaction') THEN
        RAISE EXCEPTION 'receipt_seen_credit: source must be receipt or transaction, not %', p_source
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.jsonb_typeof(p_purchases) IS DISTINCT FROM 'array' THEN
        RETURN;
    END IF;
    FOR v_purchase IN
        SELECT e.p
        FROM pg_catalog.jsonb_array_elements(p_purchases) WITH ORDINALITY AS e(p, n)
        LEFT JOIN receipt_products pr ON pr.product_id = e.p->>'product_id'
        WHERE e.n <= 50  -- the worker sends at most 20; a caller cannot make this loop long
          AND e.p->>'app_account_token' IS NOT NULL
          AND NOT EXISTS (
              SELECT 1 FROM receipt_transactions t
              WHERE t.environment = p_env
                AND t.credit_key = receipt_credit_key(pr.kind, e.p->>'transaction_id',
                                                      coalesce(nullif(e.p->>'original_transaction_id', ''),
                                                               e.p->>'transaction_id'),
                                                      e.p->>'web_order_line_item_id'))
        ORDER BY e.n
    LOOP
        RETURN QUERY
        SELECT v_purchase->>'transaction_id', c.ledger_id, c.job_id,
               c.note || pg_catalog.format(' (seen in the answer for job %s)', p_job)
        FROM receipt_announced_credit(p_env, p_bundle, v_purchase, p_source, NULL, NULL, p_rules => p_rules) c;
    END LOOP;
END $$;
