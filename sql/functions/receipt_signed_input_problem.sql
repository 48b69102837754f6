-- Why a signed transaction cannot be verified at all, or NULL when it has the shape of a JWS in compact form: three
-- base64url parts, the first two JSON objects, within the size limit. The signature is checked by the workers.
-- Setting (ALTER DATABASE … SET, ALTER ROLE … SET, or SET in a session):
--   receipt_worker.max_signed_transaction_bytes  the largest signed transaction accepted (default 65536)
CREATE OR REPLACE FUNCTION receipt_signed_input_problem(p_signed text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    limit_bytes bigint := coalesce(
        nullif(current_setting('receipt_worker.max_signed_transaction_bytes', true), '')::bigint, 65536);
    parts text[];
BEGIN
    IF p_signed IS NULL OR btrim(p_signed, E' \t\r\n') = '' THEN
        RETURN 'signed_transaction is empty';
    END IF;
    IF octet_length(p_signed) > limit_bytes THEN
        RETURN format('signed_transaction is %s bytes, over the limit of %s', octet_length(p_signed), limit_bytes);
    END IF;
    parts := string_to_array(btrim(p_signed, E' \t\r\n'), '.');
    IF cardinality(parts) <> 3 OR EXISTS (SELECT 1 FROM unnest(parts) p WHERE p !~ '^[A-Za-z0-9_-]+$') THEN
        RETURN 'signed_transaction is not a JWS (three base64url parts separated by dots)';
    END IF;
    FOR i IN 1..2 LOOP
        BEGIN
            IF jsonb_typeof(convert_from(decode(rpad(translate(parts[i], '-_', '+/'),
                                                     length(parts[i]) + (4 - length(parts[i]) % 4) % 4, '='),
                                                'base64'), 'UTF8')::jsonb) <> 'object' THEN
                RETURN format('signed_transaction''s %s is not a JSON object', (ARRAY['header', 'payload'])[i]);
            END IF;
        EXCEPTION WHEN data_exception OR invalid_text_representation OR character_not_in_repertoire THEN
            RETURN format('signed_transaction''s %s is not base64url-encoded JSON', (ARRAY['header', 'payload'])[i]);
        END;
    END LOOP;
    RETURN NULL;
END $$;
