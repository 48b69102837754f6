-- Registers p_token as p_user's (receipt_account_tokens), for register_account_token() and expect_purchase(), which
-- check their input and call this as the owner: a customer may have many tokens, a token belongs to one (another
-- customer's token is refused, SQLSTATE RW409, nothing changed). Then every purchase kept unclaimed under that token
-- (receipt_unclaimed) is credited to the customer: to an open order for its product, else to an order of its own.
-- Returns how many were credited.
CREATE OR REPLACE FUNCTION receipt_account_token_register(
    p_caller text, p_user text, p_token uuid, p_bundle text
) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_owner    record;
    v_credited integer := 0;
    v_purchase record;
BEGIN
    IF coalesce(p_user, '') = '' OR p_token IS NULL THEN
        RAISE EXCEPTION '%: user_id and app_account_token are required', p_caller
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.octet_length(p_user) > 1000 THEN
        RAISE EXCEPTION '%: user_id may be at most 1000 bytes long', p_caller
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    IF p_bundle IS NOT NULL AND NOT EXISTS (SELECT 1 FROM receipt_apps a WHERE a.bundle_id = p_bundle) THEN
        RAISE EXCEPTION '%: unknown bundle_id "%"', p_caller, p_bundle
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'add it to APPLE_BUNDLE_IDS and run receipt-worker migrate, or fix the caller';
    END IF;

    -- The lock receipt_announced_credit() takes before it looks the token up: a purchase announced at this moment
    -- is either seen below, kept unclaimed, or sees the token.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('receipt_token:' || p_token::text, 0));
    INSERT INTO receipt_account_tokens AS t (app_account_token, user_id, bundle_id)
    VALUES (p_token, p_user, p_bundle)
    ON CONFLICT (app_account_token) DO NOTHING;
    SELECT t.user_id, t.bundle_id INTO v_owner FROM receipt_account_tokens t WHERE t.app_account_token = p_token;
    IF v_owner.user_id <> p_user THEN
        RAISE EXCEPTION 'token_conflict: app_account_token % belongs to another customer', p_token
            USING ERRCODE = 'RW409',
                  HINT = 'give each customer a token of their own (a new UUID); a token names one customer for good';
    END IF;

    FOR v_purchase IN
        SELECT u.environment, u.bundle_id, u.purchase, u.notification_id, u.signed_at, u.rules
        FROM receipt_unclaimed u
        WHERE u.app_account_token = p_token AND u.claimed_at IS NULL
          AND (v_owner.bundle_id IS NULL OR u.bundle_id = v_owner.bundle_id)
        ORDER BY u.first_seen, u.id
    LOOP
        IF (SELECT c.ledger_id FROM receipt_announced_credit(v_purchase.environment, v_purchase.bundle_id,
                                                             v_purchase.purchase, 'token', v_purchase.notification_id,
                                                             v_purchase.signed_at, p_user,
                                                             p_rules => v_purchase.rules) c) IS NOT NULL THEN
            v_credited := v_credited + 1;
        END IF;
    END LOOP;
    RETURN v_credited;
END $$;
