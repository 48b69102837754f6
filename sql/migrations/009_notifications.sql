-- App Store Server Notifications V2: signed notifications taken in as they arrive and applied by the workers once
-- verified; the events the API layer reads (revocations, reinstatements, renewals, expiries, ...) with their own
-- delivery; the history of each ledger row's revocations; non-renewing subscriptions' durations.

-- Apple's id of each app (appAppleId): a production notification must carry it. Set from APPSTORE_APP_APPLE_IDS.
ALTER TABLE receipt_apps ADD COLUMN app_apple_id bigint;

-- Non-renewing subscriptions have no expiry from Apple: the catalog gives their length, and consecutive purchases
-- stack (each period starts when the previous one of that user and product ends).
ALTER TABLE receipt_products ADD COLUMN duration interval
    CHECK (duration IS NULL OR (kind = 'non_renewing' AND duration > interval '0'));
-- The products whose purchases stack: receipt_credit() looks here before taking any stacking lock.
CREATE INDEX receipt_products_duration ON receipt_products (product_id) WHERE duration IS NOT NULL;
-- A user's purchases of a product: the period a non-renewing purchase stacks on (receipt_credit()), and what a user
-- owns (the view receipt_entitlements, read WHERE user_id = $1).
-- Hash, not btree: user ids are the API layer's and may be long (a btree entry is limited to about 2.7 kB).
CREATE INDEX receipt_transactions_user ON receipt_transactions USING hash (user_id);

-- A renewal Apple announces is credited with no order: to the purchase chain's owner, by the notification.
ALTER TABLE receipt_transactions ALTER COLUMN order_id DROP NOT NULL;
ALTER TABLE receipt_transactions ADD COLUMN notification_id bigint;

-- One row per signed notification taken in (receive_notification(), the receiver, Notification History). Nothing
-- is trusted at intake: identical bytes are one row (Apple's retries of a delivery), and notificationUUID is read
-- only once the signature holds, so a forged payload cannot block or pre-empt the real one.
CREATE TABLE receipt_notifications (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state                   text NOT NULL DEFAULT 'queued'
                            CHECK (state IN ('queued', 'running', 'retry', 'applied', 'duplicate', 'rejected', 'dead')),
    source                  text NOT NULL DEFAULT 'sql' CHECK (source IN ('sql', 'receiver', 'history')),
    signed_payload          text NOT NULL,
    payload_hash            text NOT NULL,            -- hex SHA-256 of signed_payload
    attempts                integer NOT NULL DEFAULT 0,
    run_at                  timestamptz NOT NULL DEFAULT now(),
    locked_by               text,
    lease_token             uuid,
    lease_until             timestamptz,
    -- Set once verified:
    notification_uuid       uuid,
    notification_type       text,
    subtype                 text,
    environment             text,
    bundle_id               text,
    signed_at               timestamptz,              -- Apple's signedDate
    transaction_id          text,
    original_transaction_id text,
    product_id              text,
    user_id                 text,                     -- the purchase chain's owner, when one is known here
    reason                  text,                     -- rejected: invalid_signature, bundle_mismatch, app_mismatch,
                                                      -- sandbox_not_allowed; dead: retries_exhausted
    last_error              text,
    received_at             timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    finished_at             timestamptz
);
CREATE UNIQUE INDEX receipt_notifications_payload ON receipt_notifications (payload_hash);
CREATE UNIQUE INDEX receipt_notifications_applied ON receipt_notifications (notification_uuid)
    WHERE state = 'applied';
CREATE INDEX receipt_notifications_claimable ON receipt_notifications (run_at, id) WHERE state IN ('queued', 'retry');
CREATE INDEX receipt_notifications_running ON receipt_notifications (lease_until) WHERE state = 'running';

-- Every change to whether a credited purchase is revoked, in the order it was recorded; never updated. A ledger row's
-- revoked_at and revocation_reason are those of its newest entry by Apple's date (signed_at), so an older event that
-- arrives late is recorded but does not undo a newer state.
CREATE TABLE receipt_revocations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ledger_id       bigint NOT NULL REFERENCES receipt_transactions (id),
    action          text NOT NULL CHECK (action IN ('revoked', 'reinstated')),
    effective_at    timestamptz,                     -- revoked: Apple's revocation date
    reason          text,
    signed_at       timestamptz NOT NULL,            -- when Apple said so (signedDate; a receipt: when it answered)
    source          text NOT NULL CHECK (source IN ('receipt', 'notification', 'migration')),
    job_id          bigint,
    notification_id bigint,
    recorded_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_revocations_ledger ON receipt_revocations (ledger_id, signed_at, id);

-- Revocations recorded before this history existed.
INSERT INTO receipt_revocations (ledger_id, action, effective_at, reason, signed_at, source, job_id)
SELECT id, 'revoked', revoked_at, revocation_reason, revoked_at, 'migration', job_id
FROM receipt_transactions WHERE revoked_at IS NOT NULL;

-- What happened to purchases after their verdict, for the API layer: one row per change, delivered durably like
-- verdicts (read WHERE delivered_at IS NULL, act, mark_event_delivered(id) in the same transaction; NOTIFY
-- receipt_events is a wake-up hint).
CREATE TABLE receipt_events (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                    text NOT NULL,           -- revoked, reinstated, renewed, expired, ... (README)
    notification_type       text,                    -- Apple's notificationType and subtype, when a notification
    subtype                 text,
    user_id                 text,                    -- NULL: nobody here owns the purchase chain
    order_id                text,
    bundle_id               text,
    environment             text,
    transaction_id          text,
    original_transaction_id text,
    product_id              text,
    effective_at            timestamptz,             -- revocation date, the new period's start, the expiry, ...
    expires_at              timestamptz,             -- a subscription period's end, when known
    reason                  text,                    -- revocation reason, expiration intent, ...
    ledger_id               bigint,
    job_id                  bigint,
    notification_id         bigint,
    created_at              timestamptz NOT NULL DEFAULT now(),
    delivered_at            timestamptz
);
CREATE INDEX receipt_events_undelivered ON receipt_events (id) WHERE delivered_at IS NULL;
CREATE INDEX receipt_events_user ON receipt_events USING hash (user_id);

-- receipt_revoke() takes the job it is called for (sql/functions/receipt_revoke.sql creates it right after).
DROP FUNCTION IF EXISTS receipt_revoke(text, jsonb);

INSERT INTO receipt_schema_migrations (version) VALUES ('009_notifications') ON CONFLICT DO NOTHING;
