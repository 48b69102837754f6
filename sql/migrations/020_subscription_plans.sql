-- Billing plans, commitments, the next renewal's offer, and the order of a verdict's data (issue 23).
--
-- receipt_transactions, per period credited:
--   billing_plan_type   Apple's billingPlanType of the period bought: BILLED_UPFRONT, MONTHLY (a monthly plan with a
--                       12-month commitment), NULL when Apple does not say (receipts, older data)
--   signed_at           when Apple signed the data the credit came from (a signed transaction's signedDate: a
--                       verdict's, a notification's, a refresh's); NULL for receipts
ALTER TABLE receipt_transactions
    ADD COLUMN billing_plan_type text,
    ADD COLUMN signed_at         timestamptz;

-- receipt_subscriptions, per purchase chain (the current period, and what the next renewal will be):
--   period_signed_at               the signedDate of the data that last set the period and status (a notification, a
--                                  refresh, or a verdict's credit: its transaction's signedDate, a receipt's purchase
--                                  date): data signed before it changes the renewal preferences only
--   billing_plan_type              the current period's plan (the transaction's billingPlanType)
--   commitment_period, commitment_periods, commitment_expires_at, commitment_price
--                                  a plan with a commitment (the transaction's commitmentInfo): the current period is
--                                  number commitment_period of commitment_periods, the commitment ends at
--                                  commitment_expires_at, and the price after it is commitment_price (currency units)
--   renewal_billing_plan_type      the plan the next renewal uses (the renewal info's renewalBillingPlanType)
--   commitment_auto_renew, commitment_renewal_product_id, commitment_renewal_billing_plan_type,
--   commitment_renewal_at, commitment_renewal_price
--                                  what happens when the commitment ends (the renewal info's commitmentInfo): whether
--                                  it renews, to which product and plan, when, at what price (renewal_currency)
--   renewal_offer_type, renewal_offer_identifier, renewal_offer_period, renewal_offer_discount_type
--                                  the offer the next renewal uses (1 introductory, 2 promotional, 3 offer code,
--                                  4 win-back; its id; its ISO 8601 duration; FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT)
--   app_transaction_id             the app download transaction the chain belongs to (appTransactionId)
ALTER TABLE receipt_subscriptions
    ADD COLUMN period_signed_at                     timestamptz,
    ADD COLUMN billing_plan_type                    text,
    ADD COLUMN commitment_period                    integer,
    ADD COLUMN commitment_periods                   integer,
    ADD COLUMN commitment_expires_at                timestamptz,
    ADD COLUMN commitment_price                     numeric,
    ADD COLUMN renewal_billing_plan_type            text,
    ADD COLUMN commitment_auto_renew                boolean,
    ADD COLUMN commitment_renewal_product_id        text,
    ADD COLUMN commitment_renewal_billing_plan_type text,
    ADD COLUMN commitment_renewal_at                timestamptz,
    ADD COLUMN commitment_renewal_price             numeric,
    ADD COLUMN renewal_offer_type                   integer,
    ADD COLUMN renewal_offer_identifier             text,
    ADD COLUMN renewal_offer_period                 text,
    ADD COLUMN renewal_offer_discount_type          text,
    ADD COLUMN app_transaction_id                   text;

INSERT INTO receipt_schema_migrations (version) VALUES ('020_subscription_plans') ON CONFLICT DO NOTHING;
