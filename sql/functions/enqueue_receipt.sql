-- Enqueue a receipt for verification; returns the job id. The rules of receipt_enqueue() apply: idempotent per
-- order, order_conflict (SQLSTATE RW409) for the same open order with another user or product. A receipt that is
-- empty, not base64 or too large is recorded at once as rejected / malformed_input.
-- SECURITY DEFINER, so the API layer's role needs EXECUTE on this function and no write right on receipt_jobs
-- (deploy/sql/roles.sql). Like every SECURITY DEFINER function here it runs with
-- search_path = pg_catalog, public, pg_temp: the built-ins first, temporary tables last (a caller's temporary table
-- never stands in for one of ours), and the functions it calls name the built-ins with pg_catalog. (an overload
-- planted in public, where roles.sql lets nobody but the owner create, would otherwise win on a better type match).
-- The size limits come from receipt_settings, which only the owner can change, never from the caller's session.
CREATE OR REPLACE FUNCTION enqueue_receipt(
    receipt_data     text,
    order_id         text,
    user_id          text,
    product_id       text,
    transaction_id   text DEFAULT NULL,
    bundle_id        text DEFAULT NULL,
    order_created_at timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT receipt_enqueue('enqueue_receipt', 'receipt', receipt_data, NULL, transaction_id, order_id, user_id,
                           product_id, bundle_id, order_created_at, NULL, receipt_input_problem(receipt_data))
$$;
