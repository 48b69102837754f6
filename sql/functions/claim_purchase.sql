-- Support's "I paid but got nothing" (issue 37): credits a purchase Apple announced that nobody could be credited for
-- (view receipt_unclaimed_purchases) to user_id, as order order_id (default apple:<transactionId>); an open order of
-- that customer's with that id and product (an expected order, say) is verified with it. Returns the job id.
-- Refused, nothing changed: a transaction that is not unclaimed (credited already: the error names the order; or not
-- announced yet: wait for Apple's notification, or enqueue the customer's receipt), one whose token is registered to
-- another customer, a chain that belongs to another user, an order id already used for another user or product
-- (order_conflict, RW409). Support's decision: the workers' rules that kept it unclaimed (a family member's copy,
-- SANDBOX_POLICY=allowlist) are not applied again, so it is for receipt_operator (support), not the API layer.
-- SECURITY DEFINER, like enqueue_receipt().
CREATE OR REPLACE FUNCTION claim_purchase(
    transaction_id text,
    user_id        text,
    order_id       text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_unclaimed receipt_unclaimed;
    v_credited  record;
    v_ledger    record;
    v_token_user text;
BEGIN
    IF coalesce(claim_purchase.transaction_id, '') = '' OR coalesce(claim_purchase.user_id, '') = '' THEN
        RAISE EXCEPTION 'claim_purchase: transaction_id and user_id are required'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(claim_purchase.user_id) > 1000
       OR pg_catalog.octet_length(claim_purchase.order_id) > 1000 THEN
        RAISE EXCEPTION 'claim_purchase: user_id and order_id may be at most 1000 bytes long'
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    -- Credited already (by the app's copy, or another claim): say where, change nothing.
    SELECT t.order_id, t.user_id, t.environment INTO v_ledger FROM receipt_transactions t
    WHERE t.transaction_id = claim_purchase.transaction_id
    ORDER BY t.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'claim_purchase: transaction % is already credited (% ledger, user %, order %)',
                        claim_purchase.transaction_id, v_ledger.environment, v_ledger.user_id,
                        coalesce(v_ledger.order_id, '(none: a renewal)')
            USING ERRCODE = 'RW409', HINT = 'nothing to claim: look the order up with receipt-worker explain';
    END IF;
    -- Not locked here: receipt_announced_credit() orders every copy of the purchase under its own locks.
    SELECT u.* INTO v_unclaimed FROM receipt_unclaimed u
    WHERE u.transaction_id = claim_purchase.transaction_id AND u.claimed_at IS NULL
    ORDER BY u.id LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'claim_purchase: no unclaimed purchase has transaction id %', claim_purchase.transaction_id
            USING ERRCODE = 'no_data_found',
                  HINT = 'Apple has not announced it (yet): enqueue the customer''s receipt or transaction instead, '
                         'or look at receipt_unclaimed_purchases';
    END IF;
    -- A purchase whose token is registered is that customer's (it waits only because a rule kept it): not another's.
    SELECT a.user_id INTO v_token_user FROM receipt_account_tokens a
    WHERE a.app_account_token = v_unclaimed.app_account_token;
    IF v_token_user IS NOT NULL AND v_token_user <> claim_purchase.user_id THEN
        RAISE EXCEPTION 'claim_purchase: transaction % carries the appAccountToken of user %, not %',
                        claim_purchase.transaction_id, v_token_user, claim_purchase.user_id
            USING ERRCODE = 'RW409', HINT = 'claim it for the token''s customer';
    END IF;
    SELECT c.ledger_id, c.job_id, c.note INTO v_credited
    FROM receipt_announced_credit(v_unclaimed.environment, v_unclaimed.bundle_id, v_unclaimed.purchase, 'claim',
                                  v_unclaimed.notification_id, v_unclaimed.signed_at, claim_purchase.user_id,
                                  claim_purchase.order_id) c;
    IF v_credited.ledger_id IS NULL THEN
        RAISE EXCEPTION 'claim_purchase: transaction % was not credited: %', claim_purchase.transaction_id,
                        v_credited.note
            USING ERRCODE = 'RW409';
    END IF;
    RETURN v_credited.job_id;
END $$;
