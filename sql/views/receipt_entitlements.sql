-- What each user owns now, and until when: one row per user, app, product and environment, for the API layer
-- (SELECT … WHERE user_id = $1; the indexes receipt_transactions_user, receipt_subscriptions_user and
-- receipt_transactions_chain serve it).
-- Revoked ledger rows do not count.
--   non_consumable                 owned for good once credited: expires_at NULL
--   auto_renewable, non_renewing   while the latest unrevoked period has not ended: expires_at is its end (for
--                                  non-renewing ones, the end of the stacked periods, see receipt_credit())
--   consumable                     never listed: used up when delivered
--   not in receipt_products        kind NULL; listed like a subscription while its latest unrevoked expires_date is
--                                  in the future, never when it has none (treated as a consumable)
-- A purchase chain with a receipt_subscriptions row (issue 23) is listed by its status instead, under its current
-- product (an upgrade counts at once, the product it replaced no longer):
--   active                         until expires_at
--   grace_period                   until grace_period_expires_at (Apple retries the charge; expires_at shows the
--                                  grace period's end)
--   billing_retry, expired, revoked    not listed
-- nor while the chain's latest ledger row (by purchase date) is revoked: a refunded current period ends the chain's
-- service whatever its status says (Apple reports it revoked; a REFUND_REVERSED brings it back). The chain's ledger
-- rows are found through receipt_transactions_chain.
-- status: that status, or NULL for what has no subscription row (listed as above).
-- A non-renewing product without a duration has no expiry in the ledger, so it is not listed: give it one.
-- original_transaction_id, last_transaction_id and in_app_ownership_type are those of the latest purchase (by purchase
-- date) still counted. in_app_ownership_type: PURCHASED (the user bought it), FAMILY_SHARED (a family member did and
-- shares it; with FAMILY_SHARING=reject such purchases are never credited), NULL when Apple's data did not say.
CREATE OR REPLACE VIEW receipt_entitlements AS
WITH counted AS (
    -- Ledger rows of chains without a subscription row, as they are.
    SELECT t.user_id, t.bundle_id, t.product_id, t.environment, t.expires_date AS until, NULL::text AS status,
           t.original_transaction_id, t.transaction_id, t.purchase_date, t.id, t.credited_at, t.in_app_ownership_type
    FROM receipt_transactions t
    WHERE t.revoked_at IS NULL
      AND NOT EXISTS (SELECT FROM receipt_subscriptions s
                      WHERE s.environment = t.environment
                        AND s.original_transaction_id = coalesce(nullif(t.original_transaction_id, ''),
                                                                 t.transaction_id))
    UNION ALL
    -- Subscriptions served now, with their chain's latest ledger row, unless that period is revoked.
    SELECT s.user_id, s.bundle_id, s.product_id, s.environment,
           CASE s.status WHEN 'grace_period' THEN s.grace_period_expires_at ELSE s.expires_at END, s.status,
           s.original_transaction_id, latest.transaction_id, latest.purchase_date, latest.id, latest.credited_at,
           latest.in_app_ownership_type
    FROM receipt_subscriptions s
    LEFT JOIN LATERAL (
        SELECT t.transaction_id, t.purchase_date, t.id, t.credited_at, t.in_app_ownership_type, t.revoked_at
        FROM receipt_transactions t
        WHERE t.environment = s.environment AND t.original_transaction_id = s.original_transaction_id
        ORDER BY t.purchase_date DESC NULLS LAST, t.id DESC
        LIMIT 1
    ) latest ON true
    WHERE s.user_id IS NOT NULL AND s.status IN ('active', 'grace_period') AND latest.revoked_at IS NULL
)
SELECT c.user_id, c.bundle_id, c.product_id, c.environment, p.kind,
       CASE WHEN p.kind = 'non_consumable' THEN NULL ELSE max(c.until) END AS expires_at,
       (array_agg(c.original_transaction_id ORDER BY c.purchase_date DESC NULLS LAST, c.id DESC))[1]
           AS original_transaction_id,
       (array_agg(c.transaction_id ORDER BY c.purchase_date DESC NULLS LAST, c.id DESC))[1] AS last_transaction_id,
       max(c.credited_at) AS last_credited_at,
       (array_agg(c.in_app_ownership_type ORDER BY c.purchase_date DESC NULLS LAST, c.id DESC))[1]
           AS in_app_ownership_type,
       (array_agg(c.status ORDER BY c.until DESC NULLS LAST))[1] AS status
FROM counted c
LEFT JOIN receipt_products p ON p.product_id = c.product_id
GROUP BY c.user_id, c.bundle_id, c.product_id, c.environment, p.kind
HAVING p.kind = 'non_consumable'
    OR (p.kind IS DISTINCT FROM 'consumable' AND max(c.until) > now());
