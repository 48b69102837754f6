-- A verified RENEWAL_EXTENSION notification with subtype SUMMARY (notification p_id, for app p_bundle in p_env, signed
-- at p_signed; p_note: its fields as receipt_notification_apply() reads them, `summary` among them) ends the mass
-- renewal extension it reports (issue 38): the receipt_renewal_extensions row of its requestIdentifier (the same app,
-- environment and product) becomes complete with Apple's succeeded and failed counts, and an event of kind
-- renewal_extension_summary is written (reason: the request and the counts). Returns the note the notification keeps
-- (last_error) when no request here has that id (one made elsewhere, or before this table), else NULL.
CREATE OR REPLACE FUNCTION receipt_renewal_extension_summary(
    p_id bigint, p_env text, p_bundle text, p_signed timestamptz, p_note jsonb
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_summary jsonb := coalesce(p_note->'summary', '{}');
    v_request text := v_summary->>'request_identifier';
    v_found   boolean;
BEGIN
    UPDATE receipt_renewal_extensions r
    SET state = 'complete', succeeded_count = (v_summary->>'succeeded_count')::bigint,
        failed_count = (v_summary->>'failed_count')::bigint, completed_at = coalesce(r.completed_at, p_signed),
        summary_notification_id = p_id, error = NULL, updated_at = now()
    WHERE r.request_identifier = v_request AND r.scope = 'mass' AND r.environment = p_env
      AND r.bundle_id = p_bundle AND r.product_id IS NOT DISTINCT FROM v_summary->>'product_id';
    v_found := FOUND;
    PERFORM receipt_event(jsonb_build_object(
        'kind', 'renewal_extension_summary', 'notification_type', p_note->>'type', 'subtype', p_note->>'subtype',
        'bundle_id', p_bundle, 'environment', p_env, 'product_id', v_summary->>'product_id', 'effective_at', p_signed,
        'notification_id', p_id,
        'reason', format('request %s: %s succeeded, %s failed', coalesce(v_request, '(none)'),
                         coalesce(v_summary->>'succeeded_count', '?'), coalesce(v_summary->>'failed_count', '?'))));
    RETURN CASE WHEN NOT v_found THEN
        format('no mass extension request %s of %s recorded here', coalesce(v_request, '(none)'),
               coalesce(v_summary->>'product_id', 'no product')) END;
END $$;
