-- Auto-renewable subscriptions as Apple runs them (issue 23): one row per purchase chain, kept from notifications
-- and verdicts by receipt_subscription_apply(), read by receipt_entitlements and the API layer.
--   status                   active, grace_period (a failed renewal, still served until grace_period_expires_at),
--                            billing_retry (Apple retries the charge, not served), expired, revoked
--   expires_at               the current period's end
--   auto_renew               whether the next period is to be bought; auto_renew_product_id the product it renews
--                            to (a pending downgrade or crossgrade when not product_id)
--   expiration_reason        why it expired or will: voluntary, billing_error, price_increase, product_unavailable,
--                            other (Apple's expirationIntent 1-5)
--   price_increase           pending (not answered yet), accepted, NULL (none)
--   renewal_price            the next renewal's price in renewal_currency (Apple's milliunits / 1000)
--   signed_at                the newest Apple signedDate applied: data signed before it never overwrites the row
CREATE TABLE IF NOT EXISTS receipt_subscriptions (
    environment             text NOT NULL,
    original_transaction_id text NOT NULL,
    bundle_id               text NOT NULL,
    product_id              text NOT NULL,
    user_id                 text,
    status                  text NOT NULL
        CHECK (status IN ('active', 'grace_period', 'billing_retry', 'expired', 'revoked')),
    expires_at              timestamptz,
    grace_period_expires_at timestamptz,
    auto_renew              boolean,
    auto_renew_product_id   text,
    expiration_reason       text
        CHECK (expiration_reason IN ('voluntary', 'billing_error', 'price_increase', 'product_unavailable', 'other')),
    price_increase          text CHECK (price_increase IN ('pending', 'accepted')),
    renewal_price           numeric,
    renewal_currency        text,
    signed_at               timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (environment, original_transaction_id)
);
-- A user's subscriptions (receipt_entitlements, the API layer).
CREATE INDEX IF NOT EXISTS receipt_subscriptions_user ON receipt_subscriptions (user_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('017_subscriptions') ON CONFLICT DO NOTHING;
