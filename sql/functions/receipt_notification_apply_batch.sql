-- Writes back what a worker made of a batch of notifications it holds, in one round trip and one transaction:
-- receipt_notification_apply() for each (p_ids[i], p_lease_tokens[i], p_results[i]), in the order given, so every
-- rule stays in that one function. Returns each one's new state (as receipt_notification_apply() returns it: 'lost'
-- when the lease is no longer the caller's) and, for a rejected or dead one, the reason recorded.
-- One transaction: when any item fails (an error, a deadlock with another worker), nothing of the batch is written
-- and the caller writes the items one by one (each its own receipt_notification_apply() call), so a failing item
-- holds up no other; after a crash mid-batch every lease is still held and expires, and the notifications are
-- claimed again. Either way each notification is applied once: receipt_notification_apply() checks the lease.
CREATE OR REPLACE FUNCTION receipt_notification_apply_batch(p_ids bigint[], p_lease_tokens uuid[], p_results jsonb[])
RETURNS TABLE (id bigint, state text, reason text)
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := coalesce(array_length(p_ids, 1), 0);
BEGIN
    IF coalesce(array_length(p_lease_tokens, 1), 0) <> v_count OR coalesce(array_length(p_results, 1), 0) <> v_count THEN
        RAISE EXCEPTION 'receipt_notification_apply_batch: % ids, % lease tokens, % results: one of each per notification',
                        v_count, coalesce(array_length(p_lease_tokens, 1), 0), coalesce(array_length(p_results, 1), 0)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The revocation lock (1380667990, 'RKRV', which a REFUND, REVOKE or REFUND_REVERSED takes exclusively) before
    -- any chain lock: a batch without one of those holds it shared from the start, as a credit inside it would
    -- take it anyway. Otherwise a batch could hold a chain (a renewal-status change) and wait for the lock under a
    -- revocation of that chain written beside it, which holds the lock and waits for the chain: a deadlock. A batch
    -- with a revocation in it (the worker writes those alone) takes it as before, only exclusively, never shared
    -- first: two such batches each holding it shared while asking it exclusively would deadlock.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(p_results) AS r(v)
                   WHERE r.v->'notification'->>'type' IN ('REFUND', 'REVOKE', 'REFUND_REVERSED')) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(1380667990, 0);
    END IF;
    FOR i IN 1..v_count LOOP
        id := p_ids[i];
        state := receipt_notification_apply(p_ids[i], p_lease_tokens[i], p_results[i]);
        reason := NULL;
        IF state IN ('rejected', 'dead') THEN
            SELECT n.reason INTO reason FROM receipt_notifications n WHERE n.id = p_ids[i];
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
