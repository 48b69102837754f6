-- An order made before the purchase sheet opens (issue 37, "order first, then pay"): the API layer records the order
-- with the appAccountToken it gives StoreKit, and gets a job id whose verdict it delivers like any other:
--   verified       once a purchase of product_id with that token is credited to it, whatever brings it first: Apple's
--                  notification, the app's copy (enqueue_receipt() or enqueue_transaction() with the same order id,
--                  verified at once), or support's claim_purchase(..., order_id)
--   rejected       reason not_purchased when none came within wait_for (receipt_sweep() decides it)
-- It registers the token as user_id's (register_account_token(): refused, RW409, if it is another customer's).
-- Idempotent per (bundle_id, order_id) as enqueue_receipt() is: the same call returns the same job; the same open
-- order with another user or product raises order_conflict (RW409). wait_for: from 1 minute to 90 days.
-- SECURITY DEFINER, like enqueue_receipt().
CREATE OR REPLACE FUNCTION expect_purchase(
    order_id          text,
    user_id           text,
    product_id        text,
    app_account_token uuid,
    bundle_id         text DEFAULT NULL,
    wait_for          interval DEFAULT interval '72 hours'
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    IF expect_purchase.app_account_token IS NULL THEN
        RAISE EXCEPTION 'expect_purchase: app_account_token is required: the UUID the app passes to purchase(options:)'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF expect_purchase.wait_for IS NULL OR expect_purchase.wait_for < interval '1 minute'
       OR expect_purchase.wait_for > interval '90 days' THEN
        RAISE EXCEPTION 'expect_purchase: wait_for must be from 1 minute to 90 days, got %', expect_purchase.wait_for
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'how long the purchase sheet may take and Apple may take to say so: 72 hours by default';
    END IF;
    v_id := receipt_enqueue('expect_purchase', 'expected', NULL, NULL, NULL, expect_purchase.order_id,
                            expect_purchase.user_id, expect_purchase.product_id, expect_purchase.bundle_id, NULL,
                            expect_purchase.app_account_token, NULL);
    -- A new expected order waits until its deadline (an order already open keeps what it has).
    UPDATE receipt_jobs j SET run_at = j.created_at + expect_purchase.wait_for
    WHERE j.id = v_id AND j.kind = 'expected' AND j.state = 'queued' AND j.run_at = j.created_at;
    PERFORM receipt_account_token_register(
        'expect_purchase', expect_purchase.user_id, expect_purchase.app_account_token,
        (SELECT j.bundle_id FROM receipt_jobs j WHERE j.id = v_id));
    RETURN v_id;
END $$;
