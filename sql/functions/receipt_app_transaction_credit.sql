-- Records the app transaction a worker verified for job p_job_id (already written verified by receipt_complete(),
-- in the same transaction) in receipt_app_transactions, once per (environment, appTransactionId). p_app: the
-- verified payload's fields as the worker writes them ({"app_transaction_id", "bundle_id", "app_apple_id",
-- "original_application_version", "original_purchase_date_ms", "original_platform", "application_version",
-- "preorder_date_ms", "receipt_creation_date_ms"}). Returns the job's final state and reason: verified (credited
-- now, or before for this very order), or rejected: bundle_mismatch when a production one names another appAppleId
-- than the app's in receipt_apps (APPSTORE_APP_APPLE_IDS; as Apple's SignedDataVerifier checks it), owned_by_other_user
-- when another user's order has it, already_credited when another order of the same user has it. Called by
-- receipt_complete() only.
CREATE OR REPLACE FUNCTION receipt_app_transaction_credit(p_job_id bigint, p_app jsonb)
RETURNS TABLE (state text, reason text, credit_key text)
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_job      record;
    v_id       bigint;
    v_existing record;
    v_reason   text;
    v_apple_id bigint;
BEGIN
    SELECT j.id, j.bundle_id, j.order_id, j.user_id, j.environment INTO v_job
    FROM receipt_jobs j WHERE j.id = p_job_id AND j.state = 'verified';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT a.app_apple_id INTO v_apple_id FROM receipt_apps a WHERE a.bundle_id = v_job.bundle_id;
    IF v_job.environment = 'Production' AND v_apple_id IS NOT NULL
       AND (p_app->>'app_apple_id') IS DISTINCT FROM v_apple_id::text THEN
        UPDATE receipt_jobs j
        SET state = 'rejected', reason = 'bundle_mismatch',
            last_error = pg_catalog.format('the app transaction is for the app with Apple ID %s, and %s is %s '
                                           '(APPSTORE_APP_APPLE_IDS)', coalesce(p_app->>'app_apple_id', '(none)'),
                                           v_job.bundle_id, v_apple_id),
            result = (coalesce(j.result, '{}') - 'credited' - 'credit_key')
                     || pg_catalog.jsonb_build_object('reason', 'bundle_mismatch', 'app_transaction', p_app)
        WHERE j.id = v_job.id;
        RETURN QUERY SELECT 'rejected'::text, 'bundle_mismatch'::text, NULL::text;
        RETURN;
    END IF;
    INSERT INTO receipt_app_transactions AS a (
        environment, app_transaction_id, bundle_id, app_apple_id, user_id, order_id, job_id,
        original_application_version, original_purchase_date, original_platform, application_version, preorder_date,
        receipt_creation_date)
    VALUES (
        v_job.environment, p_app->>'app_transaction_id', v_job.bundle_id, (p_app->>'app_apple_id')::bigint,
        v_job.user_id, v_job.order_id, v_job.id, p_app->>'original_application_version',
        pg_catalog.to_timestamp((p_app->>'original_purchase_date_ms')::double precision / 1000),
        p_app->>'original_platform', p_app->>'application_version',
        pg_catalog.to_timestamp((p_app->>'preorder_date_ms')::double precision / 1000),
        pg_catalog.to_timestamp((p_app->>'receipt_creation_date_ms')::double precision / 1000))
    ON CONFLICT (environment, app_transaction_id) DO NOTHING
    RETURNING a.id INTO v_id;
    IF v_id IS NOT NULL THEN
        UPDATE receipt_jobs j
        SET result = coalesce(j.result, '{}')
                     || pg_catalog.jsonb_build_object('app_transaction', p_app, 'credit_key',
                                                      'app:' || (p_app->>'app_transaction_id'))
        WHERE j.id = v_job.id;
        RETURN QUERY SELECT 'verified'::text, NULL::text, 'app:' || (p_app->>'app_transaction_id');
        RETURN;
    END IF;
    SELECT a.id, a.order_id, a.user_id, a.bundle_id INTO v_existing
    FROM receipt_app_transactions a
    WHERE a.environment = v_job.environment AND a.app_transaction_id = p_app->>'app_transaction_id';
    IF v_existing.order_id = v_job.order_id AND v_existing.bundle_id = v_job.bundle_id
       AND v_existing.user_id = v_job.user_id THEN
        UPDATE receipt_jobs j
        SET result = coalesce(j.result, '{}')
                     || pg_catalog.jsonb_build_object('app_transaction', p_app, 'credit_key',
                                                      'app:' || (p_app->>'app_transaction_id'),
                                                      'detail', 'this order was credited before')
        WHERE j.id = v_job.id;
        RETURN QUERY SELECT 'verified'::text, NULL::text, 'app:' || (p_app->>'app_transaction_id');
        RETURN;
    END IF;
    v_reason := CASE WHEN v_existing.user_id <> v_job.user_id THEN 'owned_by_other_user' ELSE 'already_credited' END;
    UPDATE receipt_jobs j
    SET state = 'rejected', reason = v_reason,
        last_error = pg_catalog.format('app transaction %s is already credited to %s', p_app->>'app_transaction_id',
                                       CASE WHEN v_reason = 'owned_by_other_user' THEN 'another user'
                                            ELSE 'order ' || v_existing.order_id END),
        result = (coalesce(j.result, '{}') - 'credited' - 'credit_key')
                 || pg_catalog.jsonb_build_object('reason', v_reason, 'app_transaction', p_app)
    WHERE j.id = v_job.id;
    RETURN QUERY SELECT 'rejected'::text, v_reason, NULL::text;
END $$;
