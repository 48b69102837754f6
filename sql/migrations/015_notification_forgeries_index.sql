-- Rejected forgeries (notifications whose signature did not hold) are deleted after days, not the 180 days other
-- finished notifications are kept (receipt_prune's p_forgeries_after): anyone on the internet can send them. They are
-- found through an index of their own, so a retention call does not walk the notifications kept for 180 days to
-- reach them.
CREATE INDEX IF NOT EXISTS receipt_notifications_forgeries ON receipt_notifications (finished_at)
    WHERE state = 'rejected' AND reason = 'invalid_signature';

INSERT INTO receipt_schema_migrations (version) VALUES ('015_notification_forgeries_index') ON CONFLICT DO NOTHING;
