-- Credits whose Apple price differs from the company's price list (receipt_product_prices): one row each, newest
-- first. The same credits were announced as events of kind price_mismatch.
CREATE OR REPLACE VIEW receipt_price_mismatches AS
SELECT t.id AS ledger_id, t.credited_at, t.purchase_date, t.bundle_id, t.product_id, t.environment, t.storefront,
       t.currency, t.price AS apple_price, p.price AS list_price, t.price - p.price AS difference, t.transaction_id,
       t.order_id, t.user_id
FROM receipt_transactions t
JOIN receipt_product_prices p ON p.product_id = t.product_id AND p.currency = t.currency
WHERE t.price IS DISTINCT FROM p.price
ORDER BY t.id DESC;
