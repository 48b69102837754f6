-- A verified REFUND, REVOKE or REFUND_REVERSED (not a REFUND_PRORATED, which leaves the credit in place:
-- receipt_refund_notification()), applied by receipt_notification_apply() (notification p_id):
--   REFUND, REVOKE      the credited purchase is revoked (receipt_revocation_change: history kept, newest wins);
--                       REVOKE (Family Sharing) and a refunded non-consumable: every credited transaction of the
--                       purchase chain bought up to the revocation
--   REFUND_REVERSED     its revocation is lifted
-- All three are also recorded in receipt_known_revocations, credited here or not, and receipt_credit() consults it: a
-- copy of a revoked purchase sent later is not credited. An event per ledger row changed (revoked, reinstated), or one
-- when nothing credited here was found (passed on, with the owner if the chain is known).
-- p_tx: the transaction fields as receipt_notification_apply() reads them; p_event: the event's common columns.
-- Returns the note the notification keeps (last_error) when nothing changed, else NULL.
CREATE OR REPLACE FUNCTION receipt_notification_revocation(
    p_id bigint, p_type text, p_env text, p_signed timestamptz, p_tx jsonb, p_event jsonb
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_action    text := CASE WHEN p_type = 'REFUND_REVERSED' THEN 'reinstated' ELSE 'revoked' END;
    v_effective timestamptz;
    v_reason    text;
    v_kind      text;
    v_scope     text;
    v_row       receipt_transactions;
    v_found     boolean := false;
    v_note_text text;
BEGIN
    v_effective := CASE WHEN v_action = 'revoked'
                        THEN coalesce(to_timestamp((p_tx->>'revocation_date_ms')::bigint / 1000.0), p_signed)
                        ELSE p_signed END;
    v_reason := CASE WHEN v_action = 'revoked' THEN
                    CASE p_type WHEN 'REVOKE' THEN 'revoked by Apple (Family Sharing)' ELSE 'refunded by Apple' END
                    || coalesce(' (reason ' || (p_tx->>'revocation_reason') || ')', '') END;
    SELECT p.kind INTO v_kind FROM receipt_products p WHERE p.product_id = p_tx->>'product_id';
    v_scope := CASE WHEN p_type = 'REVOKE' OR v_kind = 'non_consumable' THEN 'chain' ELSE 'transaction' END;
    IF p_tx->>'transaction_id' IS NOT NULL THEN
        -- What is known, kept for crediting (receipt_credit() holds this lock shared while it credits): with the
        -- lock, every credit made before is committed and found below, and none is made until this commits.
        -- 1380667990 is 'RKRV' in ASCII. Not needed to lift a revocation: a credit refused meanwhile is safe.
        IF v_action = 'revoked' THEN
            PERFORM pg_advisory_xact_lock(1380667990, 0);
        END IF;
        INSERT INTO receipt_known_revocations (environment, transaction_id, original_transaction_id,
                                               web_order_line_item_id, scope, action, effective_at, reason,
                                               signed_at, notification_id)
        VALUES (p_env, p_tx->>'transaction_id', nullif(p_tx->>'original_transaction_id', ''),
                nullif(p_tx->>'web_order_line_item_id', ''), v_scope, v_action,
                CASE WHEN v_action = 'revoked' THEN v_effective END, v_reason, p_signed, p_id);
    END IF;
    FOR v_row IN
        SELECT * FROM receipt_transactions t
        WHERE t.environment = p_env
          AND (t.transaction_id = p_tx->>'transaction_id'
               OR (v_scope = 'chain' AND t.original_transaction_id = p_tx->>'original_transaction_id'
                   AND (t.purchase_date IS NULL OR t.purchase_date <= v_effective)))
        ORDER BY t.id
    LOOP
        v_found := true;
        IF receipt_revocation_change(v_row.id, v_action, v_effective, v_reason, p_signed, 'notification', NULL,
                                     p_id) THEN
            PERFORM receipt_event(p_event || jsonb_build_object(
                'kind', v_action, 'user_id', v_row.user_id, 'order_id', v_row.order_id,
                'product_id', v_row.product_id, 'effective_at', v_effective, 'reason', v_reason,
                'ledger_id', v_row.id, 'job_id', v_row.job_id));
            -- The same NOTIFY as a revocation a receipt shows (receipt_revoke()): the ledger row's id alone.
            IF v_action = 'revoked' THEN
                PERFORM pg_catalog.pg_notify('receipt_revocations',
                                             pg_catalog.json_build_object('ledger_id', v_row.id)::text);
            END IF;
        ELSE
            v_note_text := 'no change: the ledger already holds this state, or a newer one (by signedDate)';
        END IF;
    END LOOP;
    IF NOT v_found THEN
        -- Nothing credited here: passed on (the owner, if the chain is known).
        PERFORM receipt_event(p_event || jsonb_build_object(
            'kind', v_action, 'effective_at', v_effective, 'reason', v_reason));
    END IF;
    RETURN v_note_text;
END $$;
