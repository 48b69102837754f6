-- Setting (ALTER DATABASE … SET, ALTER ROLE … SET, or SET in a session):
--   receipt_worker.max_receipt_bytes  the largest receipt accepted (default 1048576)
--
-- Why a receipt cannot be verified at all, or NULL when it looks like base64 of a sensible size.
-- Line breaks and spaces are valid inside base64 (iOS inserts them).
CREATE OR REPLACE FUNCTION receipt_input_problem(p_receipt text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    compact text;
    limit_bytes bigint := coalesce(nullif(current_setting('receipt_worker.max_receipt_bytes', true), '')::bigint,
                                   1048576);
BEGIN
    -- Nothing but whitespace; the pattern stops at the first other character (btrim() would copy the receipt).
    IF p_receipt IS NULL OR p_receipt ~ '^[ \t\r\n]*$' THEN
        RETURN 'receipt_data is empty';
    END IF;
    IF octet_length(p_receipt) > limit_bytes THEN
        RETURN format('receipt_data is %s bytes, over the limit of %s', octet_length(p_receipt), limit_bytes);
    END IF;
    -- replace() rather than one regexp_replace() or translate(): about 9 µs against 19 and 250 on a 6 KB receipt.
    compact := replace(replace(replace(replace(p_receipt, E'\n', ''), E'\r', ''), ' ', ''), E'\t', '');
    IF compact !~ '^[A-Za-z0-9+/]*={0,2}$' OR octet_length(compact) % 4 <> 0 THEN
        RETURN 'receipt_data is not base64';
    END IF;
    RETURN NULL;
END $$;
