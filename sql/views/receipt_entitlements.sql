-- What each user owns now, and until when: one row per user, app, product and environment, for the API layer
-- (SELECT … WHERE user_id = $1; the index receipt_transactions_user serves it). Revoked ledger rows do not count.
--   non_consumable                 owned for good once credited: expires_at NULL
--   auto_renewable, non_renewing   while the latest unrevoked period has not ended: expires_at is its end (for
--                                  non-renewing ones, the end of the stacked periods, see receipt_credit())
--   consumable                     never listed: used up when delivered
--   not in receipt_products        kind NULL; listed like a subscription while its latest unrevoked expires_date is
--                                  in the future, never when it has none (treated as a consumable)
-- A non-renewing product without a duration has no expiry in the ledger, so it is not listed: give it one.
-- original_transaction_id, last_transaction_id and in_app_ownership_type are those of the latest purchase (by purchase
-- date) still counted. in_app_ownership_type: PURCHASED (the user bought it), FAMILY_SHARED (a family member did and
-- shares it; with FAMILY_SHARING=reject such purchases are never credited), NULL when Apple's data did not say.
CREATE OR REPLACE VIEW receipt_entitlements AS
SELECT t.user_id, t.bundle_id, t.product_id, t.environment, p.kind,
       CASE WHEN p.kind = 'non_consumable' THEN NULL ELSE max(t.expires_date) END AS expires_at,
       (array_agg(t.original_transaction_id ORDER BY t.purchase_date DESC NULLS LAST, t.id DESC))[1]
           AS original_transaction_id,
       (array_agg(t.transaction_id ORDER BY t.purchase_date DESC NULLS LAST, t.id DESC))[1] AS last_transaction_id,
       max(t.credited_at) AS last_credited_at,
       (array_agg(t.in_app_ownership_type ORDER BY t.purchase_date DESC NULLS LAST, t.id DESC))[1]
           AS in_app_ownership_type
FROM receipt_transactions t
LEFT JOIN receipt_products p ON p.product_id = t.product_id
WHERE t.revoked_at IS NULL
GROUP BY t.user_id, t.bundle_id, t.product_id, t.environment, p.kind
HAVING p.kind = 'non_consumable'
    OR (p.kind IS DISTINCT FROM 'consumable' AND max(t.expires_date) > now());
