-- Enqueue a receipt for verification; returns the job id. The rules of receipt_enqueue() apply: idempotent per
-- order, order_conflict (SQLSTATE RW409) for the same open order with another user or product. A receipt that is
-- empty, not base64 or too large is recorded at once as rejected / malformed_input.
-- SECURITY DEFINER (with the search_path fixed at creation), so the API layer's role needs EXECUTE on this
-- function and no write right on receipt_jobs (deploy/sql/roles.sql).
CREATE OR REPLACE FUNCTION enqueue_receipt(
    receipt_data     text,
    order_id         text,
    user_id          text,
    product_id       text,
    transaction_id   text DEFAULT NULL,
    bundle_id        text DEFAULT NULL,
    order_created_at timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT receipt_enqueue('enqueue_receipt', 'receipt', receipt_data, NULL, transaction_id, order_id, user_id,
                           product_id, bundle_id, order_created_at, NULL, receipt_input_problem(receipt_data))
$$;
