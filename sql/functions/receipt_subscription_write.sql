-- Writes a purchase chain's receipt_subscriptions row as p_row holds it, every column: the one writer of the table,
-- called by receipt_subscription_apply() and receipt_subscription_credited() under the chain's lock
-- (pg_advisory_xact_lock on 'receipt_subscription:' || environment || ':' || original_transaction_id) with the row
-- read FOR UPDATE, so p_row is the row as it is, with their changes. Updates the row when it exists, else inserts it.
-- The column list is the table's, in its order (a column added to the table must be added here: until then the
-- UPDATE fails, it never drops the column's value).
CREATE OR REPLACE FUNCTION receipt_subscription_write(p_row receipt_subscriptions) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    p_row.created_at := coalesce(p_row.created_at, now());
    UPDATE receipt_subscriptions s
    SET (environment, original_transaction_id, bundle_id, product_id, user_id, status, expires_at,
         grace_period_expires_at, auto_renew, auto_renew_product_id, expiration_reason, price_increase, renewal_price,
         renewal_currency, signed_at, created_at, updated_at, period_signed_at, billing_plan_type, commitment_period,
         commitment_periods, commitment_expires_at, commitment_price, renewal_billing_plan_type, commitment_auto_renew,
         commitment_renewal_product_id, commitment_renewal_billing_plan_type, commitment_renewal_at,
         commitment_renewal_price, renewal_offer_type, renewal_offer_identifier, renewal_offer_period,
         renewal_offer_discount_type, app_transaction_id, app_account_token, eligible_win_back_offer_ids)
        = ROW((p_row).*)
    WHERE s.environment = p_row.environment AND s.original_transaction_id = p_row.original_transaction_id;
    IF NOT FOUND THEN
        INSERT INTO receipt_subscriptions SELECT (p_row).*;
    END IF;
END $$;
