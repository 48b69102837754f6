-- Purchases Apple announced that nobody could be credited for yet (issue 37): no appAccountToken, a token nobody
-- registered, or a chain that belongs to another user (note says which). Each waits for its token to be registered
-- (register_account_token(), expect_purchase()) or for support's claim_purchase(); once credited it leaves the view.
CREATE OR REPLACE VIEW receipt_unclaimed_purchases AS
SELECT u.environment, u.bundle_id, u.product_id, u.transaction_id, u.original_transaction_id, u.app_account_token,
       u.purchase_date, u.price, u.currency, u.first_seen, u.source, u.note
FROM receipt_unclaimed u
WHERE u.claimed_at IS NULL
  -- Credited meanwhile by the app's own copy (receipt_credit() does not look here): not waiting any more.
  AND NOT EXISTS (SELECT 1 FROM receipt_transactions t
                  WHERE t.environment = u.environment AND t.transaction_id = u.transaction_id);
