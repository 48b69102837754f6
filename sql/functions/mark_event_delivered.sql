-- The API layer calls this in the same transaction in which it acted on an event of receipt_events.
-- Returns false when the event is unknown or already delivered.
CREATE OR REPLACE FUNCTION mark_event_delivered(event_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE receipt_events e SET delivered_at = pg_catalog.now()
    WHERE e.id = mark_event_delivered.event_id AND e.delivered_at IS NULL;
    RETURN FOUND;
END $$;
