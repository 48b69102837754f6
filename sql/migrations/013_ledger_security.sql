-- What Apple said about revocations, kept whether or not the purchase is credited here, so crediting can consult it
-- (docs/architecture.md, rule 14); and whether each credited purchase was bought or shared through Family Sharing.
--
-- Before this, a REFUND or REVOKE notification about a purchase not (yet) in the ledger changed nothing but an event:
-- the purchase's pre-refund copy (a signed transaction the device kept, an old receipt), sent afterwards, was
-- credited. receipt_known_revocations holds one row per applied REFUND, REVOKE and REFUND_REVERSED notification;
-- receipt_credit() passes over a candidate whose newest applicable entry says revoked (receipt_known_revoked()).
-- Append-only, like receipt_revocations (sql/triggers/receipt_known_revocations_guard.sql); never pruned.
CREATE TABLE receipt_known_revocations (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment             text NOT NULL,
    transaction_id          text NOT NULL,
    original_transaction_id text,
    web_order_line_item_id  text,                 -- the subscription period: a restore of it has another id
    -- transaction: the entry applies to this transaction (and its period); chain: to every transaction of
    -- original_transaction_id bought up to effective_at (REVOKE, which ends a Family Sharing member's access, and a
    -- refund of a non-consumable, whose restores carry other transaction ids).
    scope                   text NOT NULL CHECK (scope IN ('transaction', 'chain')),
    action                  text NOT NULL CHECK (action IN ('revoked', 'reinstated')),
    effective_at            timestamptz,          -- revoked: Apple's revocation date
    reason                  text,
    signed_at               timestamptz NOT NULL, -- Apple's signedDate: the newest entry that applies wins
    notification_id         bigint,
    recorded_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_known_revocations_transaction ON receipt_known_revocations (environment, transaction_id);
CREATE INDEX receipt_known_revocations_period ON receipt_known_revocations (environment, web_order_line_item_id)
    WHERE web_order_line_item_id IS NOT NULL;
CREATE INDEX receipt_known_revocations_chain ON receipt_known_revocations (environment, original_transaction_id)
    WHERE scope = 'chain';

-- The notifications applied before this table existed. Their revocation dates and periods were not kept: Apple's
-- signedDate stands for the date.
INSERT INTO receipt_known_revocations (environment, transaction_id, original_transaction_id, scope, action,
                                       effective_at, reason, signed_at, notification_id)
SELECT CASE WHEN n.environment = 'Production' THEN 'Production' ELSE 'Sandbox' END, n.transaction_id,
       n.original_transaction_id,
       CASE WHEN n.notification_type = 'REVOKE' OR p.kind = 'non_consumable' THEN 'chain' ELSE 'transaction' END,
       CASE WHEN n.notification_type = 'REFUND_REVERSED' THEN 'reinstated' ELSE 'revoked' END,
       CASE WHEN n.notification_type = 'REFUND_REVERSED' THEN NULL ELSE n.signed_at END,
       CASE n.notification_type WHEN 'REVOKE' THEN 'revoked by Apple (Family Sharing)'
                                WHEN 'REFUND' THEN 'refunded by Apple' END,
       n.signed_at, n.id
FROM receipt_notifications n
LEFT JOIN receipt_products p ON p.product_id = n.product_id
WHERE n.state = 'applied' AND n.notification_type IN ('REFUND', 'REVOKE', 'REFUND_REVERSED')
  AND n.transaction_id IS NOT NULL AND n.signed_at IS NOT NULL
ORDER BY n.id;

-- Family Sharing: PURCHASED (bought by the user) or FAMILY_SHARED (shared by a family member), as Apple says it (a
-- signed transaction's inAppOwnershipType, a receipt entry's in_app_ownership_type); NULL when the source did not say.
ALTER TABLE receipt_transactions ADD COLUMN in_app_ownership_type text;

INSERT INTO receipt_schema_migrations (version) VALUES ('013_ledger_security') ON CONFLICT DO NOTHING;
