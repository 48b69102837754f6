-- A purchase credited from what Apple signed, outside receipt_credit()'s rounds: a billing period credited to a
-- purchase chain's owner with no order (a renewal a notification carries, receipt_notification_period_credit(), or
-- one Get All Subscription Statuses shows, receipt_subscription_refresh()), or a purchase Apple announced credited to
-- its customer's order (receipt_announced_credit(): p_order_id and p_job_id name it).
-- The ledger row is written once, under its credit key; returns its id, or NULL when that key was credited before.
-- The caller has checked that the period is the owner's and that no notification revoked it (rule 14), under the
-- revocation lock. p_tx: the transaction fields as the worker writes them (NotificationOutcome); p_original: the
-- chain's original transaction id as the caller names it; p_notification_id: the notification applied, NULL for a
-- refresh; p_signed_at: when Apple signed what credits the period.
CREATE OR REPLACE FUNCTION receipt_period_credit_insert(
    p_env text, p_bundle text, p_owner text, p_tx jsonb, p_original text, p_notification_id bigint,
    p_signed_at timestamptz, p_order_id text DEFAULT NULL, p_job_id bigint DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                      web_order_line_item_id, product_id, quantity, bundle_id, order_id, user_id,
                                      job_id, purchase_date, expires_date, notification_id,
                                      in_app_ownership_type, price, currency, storefront, offer_type,
                                      offer_discount_type, transaction_reason, billing_plan_type, signed_at,
                                      storefront_id)
    SELECT p_env,
           receipt_credit_key(p.kind, p_tx->>'transaction_id', p_original, p_tx->>'web_order_line_item_id'),
           p_tx->>'transaction_id', p_original, p_tx->>'web_order_line_item_id', p_tx->>'product_id',
           coalesce((p_tx->>'quantity')::integer, 1), p_bundle, p_order_id, p_owner, p_job_id,
           to_timestamp((p_tx->>'purchase_date_ms')::bigint / 1000.0),
           to_timestamp((p_tx->>'expires_date_ms')::bigint / 1000.0), p_notification_id,
           nullif(p_tx->>'in_app_ownership_type', ''),
           -- What Apple charged for the period (issue 24), as receipt_credit() keeps it: currency units.
           round((p_tx->>'price_milliunits')::numeric / 1000, 3), nullif(p_tx->>'currency', ''),
           nullif(p_tx->>'storefront', ''), (p_tx->>'offer_type')::integer,
           nullif(p_tx->>'offer_discount_type', ''), nullif(p_tx->>'transaction_reason', ''),
           nullif(p_tx->>'billing_plan_type', ''), p_signed_at,  -- issue 23
           nullif(p_tx->>'storefront_id', '')  -- issue 38
    -- The product's kind decides the credit key; a product not in receipt_products has none (NULL).
    FROM (SELECT 1) AS one
    LEFT JOIN receipt_products p ON p.product_id = p_tx->>'product_id'
    ON CONFLICT (environment, credit_key) DO NOTHING
    RETURNING id
$$;
