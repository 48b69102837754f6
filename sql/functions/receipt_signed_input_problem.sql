-- Why a signed transaction cannot be verified at all, or NULL when it has the shape of a JWS in compact form: three
-- base64url parts, the first two JSON objects, within the size limit. The signature is checked by the workers.
-- Setting (the owner's: UPDATE receipt_settings SET value = … WHERE name = …; migration 012):
--   receipt_worker.max_signed_transaction_bytes  the largest signed transaction accepted (default 65536)
-- A caller's SET of the same name changes nothing.
-- Called by enqueue_transaction() (SECURITY DEFINER): built-ins are named with pg_catalog., as in
-- receipt_input_problem().
CREATE OR REPLACE FUNCTION receipt_signed_input_problem(p_signed text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    limit_bytes bigint := coalesce(
        (SELECT s.value::bigint FROM receipt_settings s WHERE s.name = 'receipt_worker.max_signed_transaction_bytes'),
        65536);
    trimmed text := pg_catalog.btrim(p_signed, E' \t\r\n');
    part text;
    i integer := 1;
BEGIN
    IF coalesce(trimmed, '') = '' THEN
        RETURN 'signed_transaction is empty';
    END IF;
    IF pg_catalog.octet_length(p_signed) > limit_bytes THEN
        RETURN pg_catalog.format('signed_transaction is %s bytes, over the limit of %s',
                                 pg_catalog.octet_length(p_signed), limit_bytes);
    END IF;
    IF trimmed !~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' THEN
        RETURN 'signed_transaction is not a JWS (three base64url parts separated by dots)';
    END IF;
    -- Header and payload decoded in one block (one subtransaction): base64url to base64 with replace(), which
    -- copies bytes (translate() works character by character and cost more than the rest together), and parsed as
    -- json, which only validates (jsonb would build the value).
    BEGIN
        WHILE i <= 2 LOOP
            part := pg_catalog.split_part(trimmed, '.', i);
            IF pg_catalog.json_typeof(pg_catalog.convert_from(
                   pg_catalog.decode(pg_catalog.replace(pg_catalog.replace(part, '-', '+'), '_', '/')
                                     || pg_catalog.repeat('=', (4 - pg_catalog.length(part) % 4) % 4), 'base64'),
                   'UTF8')::json) <> 'object' THEN
                RETURN pg_catalog.format('signed_transaction''s %s is not a JSON object',
                                         (ARRAY['header', 'payload'])[i]);
            END IF;
            i := i + 1;
        END LOOP;
    EXCEPTION WHEN data_exception OR invalid_text_representation OR character_not_in_repertoire THEN
        RETURN pg_catalog.format('signed_transaction''s %s is not base64url-encoded JSON',
                                 (ARRAY['header', 'payload'])[i]);
    END;
    RETURN NULL;
END $$;
