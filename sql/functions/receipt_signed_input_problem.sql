-- Why a signed transaction cannot be verified at all, or NULL when it has the shape of a JWS in compact form: three
-- base64url parts, the first two JSON objects, within the size limit. The signature is checked by the workers.
-- Setting (ALTER DATABASE … SET, ALTER ROLE … SET, or SET in a session):
--   receipt_worker.max_signed_transaction_bytes  the largest signed transaction accepted (default 65536)
CREATE OR REPLACE FUNCTION receipt_signed_input_problem(p_signed text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    limit_bytes bigint := coalesce(
        nullif(current_setting('receipt_worker.max_signed_transaction_bytes', true), '')::bigint, 65536);
    trimmed text := btrim(p_signed, E' \t\r\n');
    part text;
    i integer := 1;
BEGIN
    IF coalesce(trimmed, '') = '' THEN
        RETURN 'signed_transaction is empty';
    END IF;
    IF octet_length(p_signed) > limit_bytes THEN
        RETURN format('signed_transaction is %s bytes, over the limit of %s', octet_length(p_signed), limit_bytes);
    END IF;
    IF trimmed !~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' THEN
        RETURN 'signed_transaction is not a JWS (three base64url parts separated by dots)';
    END IF;
    -- Header and payload decoded in one block (one subtransaction): base64url to base64 with replace(), which
    -- copies bytes (translate() works character by character and cost more than the rest together), and parsed as
    -- json, which only validates (jsonb would build the value).
    BEGIN
        WHILE i <= 2 LOOP
            part := split_part(trimmed, '.', i);
            IF json_typeof(convert_from(decode(replace(replace(part, '-', '+'), '_', '/')
                                               || repeat('=', (4 - length(part) % 4) % 4), 'base64'),
                                        'UTF8')::json) <> 'object' THEN
                RETURN format('signed_transaction''s %s is not a JSON object', (ARRAY['header', 'payload'])[i]);
            END IF;
            i := i + 1;
        END LOOP;
    EXCEPTION WHEN data_exception OR invalid_text_representation OR character_not_in_repertoire THEN
        RETURN format('signed_transaction''s %s is not base64url-encoded JSON', (ARRAY['header', 'payload'])[i]);
    END;
    RETURN NULL;
END $$;
