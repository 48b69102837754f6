-- Enqueue StoreKit's app transaction (AppTransaction.shared's jwsRepresentation, as the app sent it) for
-- verification; returns the job id. A worker verifies its signature and chain first, then that it is for the job's
-- app (else rejected, bundle_mismatch) and an environment the workers accept (SANDBOX_POLICY; Xcode and LocalTesting
-- only with APPSTORE_ALLOW_TEST_ENVIRONMENTS), and records the app's original purchase in receipt_app_transactions:
-- one row per appTransactionId and environment, ever (another order presenting it again is rejected,
-- already_credited, or owned_by_other_user when it was credited to another user). Device verification
-- (deviceVerification, deviceVerificationNonce) is the app's to check: the server cannot.
--   SELECT enqueue_app_transaction(signed_app_transaction => $1, order_id => $2, user_id => $3);
-- The job's product_id is 'app_transaction'. The rules of receipt_enqueue() apply, as for enqueue_transaction():
-- one job per open order; input that cannot be a JWS is recorded at once as rejected / malformed_input.
-- SECURITY DEFINER, like enqueue_receipt().
CREATE OR REPLACE FUNCTION enqueue_app_transaction(
    signed_app_transaction text,
    order_id               text,
    user_id                text,
    bundle_id              text DEFAULT NULL
) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT receipt_enqueue(
        'enqueue_app_transaction', 'app_transaction', NULL, signed_app_transaction, NULL, order_id, user_id,
        'app_transaction', bundle_id, NULL, NULL,
        CASE WHEN signed_app_transaction IS NULL THEN 'signed_app_transaction is required'
             ELSE pg_catalog.replace(receipt_signed_input_problem(signed_app_transaction), 'signed_transaction',
                                     'signed_app_transaction') END)
$$;
