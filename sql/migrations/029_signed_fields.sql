-- Issue 38: what Apple signs that the service read and dropped, kept.
--   receipt_transactions.storefront_id             the App Store storefront's id (storefrontId, e.g. 143441) beside
--                                                  its country code (storefront)
--   receipt_subscriptions.app_account_token        the renewal info's appAccountToken: whose the chain is, as the
--                                                  app (or Set App Account Token) says
--   receipt_subscriptions.eligible_win_back_offer_ids  the win-back offers Apple says the customer may redeem now
-- Nullable columns without a default: added without rewriting the tables (instant on any size), and the previous
-- release's workers, which never name them, go on working.
ALTER TABLE receipt_transactions ADD COLUMN IF NOT EXISTS storefront_id text;
ALTER TABLE receipt_subscriptions ADD COLUMN IF NOT EXISTS app_account_token uuid;
ALTER TABLE receipt_subscriptions ADD COLUMN IF NOT EXISTS eligible_win_back_offer_ids text[];

INSERT INTO receipt_schema_migrations (version) VALUES ('029_signed_fields') ON CONFLICT DO NOTHING;
