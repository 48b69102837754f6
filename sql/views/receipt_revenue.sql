-- Revenue per UTC day of purchase, app, product, environment and currency, from the prices Apple signed (credits
-- that carry none, from receipts, are left out; so are purchases shared through Family Sharing, which the family
-- member who bought them paid for once).
--   purchases  credits
--   gross      price × quantity
--   refunded   price × quantity × the share Apple refunded: all of it when the credit is revoked (not a Family
--              Sharing REVOKE), revocation_percentage / 100000 for a REFUND_PRORATED (whose credit stays)
--   net        gross - refunded
CREATE OR REPLACE VIEW receipt_revenue AS
SELECT (coalesce(t.purchase_date, t.credited_at) AT TIME ZONE 'UTC')::date AS day, t.bundle_id, t.product_id,
       t.environment, t.currency,
       count(*) AS purchases,
       sum(t.price * t.quantity) AS gross,
       sum(t.price * t.quantity * s.share) AS refunded,
       sum(t.price * t.quantity * (1 - s.share)) AS net
FROM receipt_transactions t
CROSS JOIN LATERAL (
    SELECT CASE WHEN t.revocation_type = 'REFUND_PRORATED' AND t.revoked_at IS NULL
                    THEN coalesce(t.revocation_percentage, 0) / 100000.0
                WHEN t.revoked_at IS NOT NULL AND t.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE'
                     AND t.revocation_reason NOT LIKE 'revoked by Apple (Family Sharing)%'
                    THEN 1
                ELSE 0 END::numeric AS share
) s
WHERE t.price IS NOT NULL AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
GROUP BY 1, 2, 3, 4, 5;
