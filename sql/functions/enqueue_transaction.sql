-- Enqueue a StoreKit 2 purchase for verification; returns the job id. Give signed_transaction (the app's
-- Transaction.jwsRepresentation), or transaction_id alone (the workers look it up with the App Store Server API), or
-- both (the signed transaction must then be that transaction). Call it with named arguments:
--   SELECT enqueue_transaction(signed_transaction => $1, order_id => $2, user_id => $3, product_id => $4);
-- order_id, user_id and product_id are required (they have defaults only because PostgreSQL wants every parameter
-- after a defaulted one to have one). app_account_token: the UUID the app passed to purchase(options:), if any; the
-- transaction must then carry the same appAccountToken (else rejected, account_mismatch).
-- The rules of receipt_enqueue() apply, as for enqueue_receipt(): one job per open order, whatever its input.
-- Input that cannot be a signed transaction or a transaction id is recorded at once as rejected / malformed_input.
-- SECURITY DEFINER, like enqueue_receipt().
CREATE OR REPLACE FUNCTION enqueue_transaction(
    signed_transaction text DEFAULT NULL,
    transaction_id     text DEFAULT NULL,
    order_id           text DEFAULT NULL,
    user_id            text DEFAULT NULL,
    product_id         text DEFAULT NULL,
    bundle_id          text DEFAULT NULL,
    order_created_at   timestamptz DEFAULT NULL,
    app_account_token  uuid DEFAULT NULL
) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT receipt_enqueue(
        'enqueue_transaction',
        CASE WHEN signed_transaction IS NULL THEN 'transaction_id' ELSE 'signed_transaction' END,
        NULL, signed_transaction, transaction_id, order_id, user_id, product_id, bundle_id, order_created_at,
        app_account_token,
        CASE
            WHEN signed_transaction IS NOT NULL THEN receipt_signed_input_problem(signed_transaction)
            WHEN coalesce(transaction_id, '') = '' THEN 'signed_transaction or transaction_id is required'
            WHEN transaction_id !~ '^[0-9]{1,32}$' THEN 'transaction_id is not an App Store transaction id (digits)'
        END)
$$;
