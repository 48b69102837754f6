-- Revenue in the ledger, the company's price list, and Apple's refund requests answered (issue 24).
--
-- The ledger keeps what Apple said a purchase cost, from signed transactions and Server API answers (receipts carry
-- none: NULL). price is in currency units (Apple's milliunits / 1000), for one unit of the product as configured in
-- App Store Connect; the row's revenue is price × quantity. On a refund, revocation_type (REFUND_FULL,
-- REFUND_PRORATED, FAMILY_REVOKE) and revocation_percentage (milliunits: 100000 = all of it) say how much came back:
-- a REFUND_PRORATED leaves the credit in place and only that share of its revenue is refunded.
ALTER TABLE receipt_transactions
    ADD COLUMN price                 numeric,
    ADD COLUMN currency              text,     -- ISO 4217, as Apple gives it
    ADD COLUMN storefront            text,     -- ISO 3166-1 alpha-3 country code of the App Store
    ADD COLUMN offer_type            integer,  -- 1 introductory, 2 promotional, 3 offer code, 4 win-back
    ADD COLUMN offer_discount_type   text,     -- FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT
    ADD COLUMN transaction_reason    text,     -- PURCHASE or RENEWAL
    ADD COLUMN revocation_type       text,
    ADD COLUMN revocation_percentage integer CHECK (revocation_percentage BETWEEN 0 AND 100000);

-- The company's own price list: what each product should cost in each currency. A credit whose Apple price differs
-- is an event of kind price_mismatch (never a rejection: Apple charged what it charged) and a row of view
-- receipt_price_mismatches.
CREATE TABLE receipt_product_prices (
    product_id text NOT NULL,
    currency   text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    price      numeric NOT NULL CHECK (price >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (product_id, currency)
);

-- What to answer Apple's refund requests (CONSUMPTION_REQUEST) with when the app gave no answer within
-- CONSUMPTION_ANSWER_AFTER_MINUTES: decline, grant_full, grant_prorated, or NULL (do not answer).
ALTER TABLE receipt_products
    ADD COLUMN refund_preference text CHECK (refund_preference IN ('decline', 'grant_full', 'grant_prorated'));

-- Customers' consent to send Apple their consumption data (set_customer_consent()); none: a request is skipped.
CREATE TABLE receipt_customer_consents (
    user_id    text PRIMARY KEY CHECK (user_id <> ''),
    consented  boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- How much of a consumable or non-renewing purchase was used (record_consumption()), in milliunits (0-100000).
CREATE TABLE receipt_consumption (
    transaction_id         text PRIMARY KEY CHECK (transaction_id <> ''),
    consumption_percentage integer NOT NULL CHECK (consumption_percentage BETWEEN 0 AND 100000),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

-- One row per CONSUMPTION_REQUEST notification (deduplicated by its notificationUUID, as notifications are).
CREATE TABLE receipt_refund_requests (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment             text NOT NULL,
    bundle_id               text,
    transaction_id          text NOT NULL,
    original_transaction_id text,
    user_id                 text,                     -- the purchase chain's owner, when known here
    product_id              text,
    reason                  text,                     -- Apple's consumptionRequestReason
    received_at             timestamptz NOT NULL DEFAULT now(),
    respond_by              timestamptz NOT NULL,     -- 12 hours after Apple's signedDate
    state                   text NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'answered', 'skipped', 'failed')),
    skip_reason             text,                     -- no_consent, no_policy, expired
    answer                  jsonb,                    -- exactly what was sent to Apple
    answered_at             timestamptz,
    outcome                 text CHECK (outcome IN ('refunded', 'declined')),
    -- The app's own answer (answer_refund_request()), which wins when given before the policy answers.
    app_answer              jsonb,
    app_answered_at         timestamptz,
    -- Sending: the next attempt, how many were made, the last failure (never customer data).
    attempts                integer NOT NULL DEFAULT 0,
    next_attempt_at         timestamptz NOT NULL DEFAULT now(),
    last_error              text,
    notification_uuid       uuid UNIQUE,
    notification_id         bigint
);
CREATE INDEX receipt_refund_requests_pending ON receipt_refund_requests (next_attempt_at) WHERE state = 'pending';
CREATE INDEX receipt_refund_requests_transaction ON receipt_refund_requests (environment, transaction_id);

INSERT INTO receipt_schema_migrations (version) VALUES ('016_refunds_revenue') ON CONFLICT DO NOTHING;
