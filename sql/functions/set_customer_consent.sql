-- For the API layer: whether the customer `user_id` consented to sending Apple their consumption data when they ask
-- for a refund (Send Consumption Information's customerConsented). Without consent a refund request is skipped
-- (no_consent) and nothing is sent. Returns nothing; call it again to change it. user_id is at most 256 bytes.
CREATE OR REPLACE FUNCTION set_customer_consent(user_id text, consented boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF set_customer_consent.user_id IS NULL OR set_customer_consent.user_id = '' OR consented IS NULL THEN
        RAISE EXCEPTION 'set_customer_consent: give a user id and true or false'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.octet_length(set_customer_consent.user_id) > 256 THEN
        RAISE EXCEPTION 'set_customer_consent: user_id is % bytes, over 256',
                        pg_catalog.octet_length(set_customer_consent.user_id)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'pass the user id your orders carry (receipt_jobs.user_id)';
    END IF;
    INSERT INTO public.receipt_customer_consents AS c (user_id, consented, updated_at)
    VALUES (set_customer_consent.user_id, set_customer_consent.consented, pg_catalog.now())
    ON CONFLICT ON CONSTRAINT receipt_customer_consents_pkey
    DO UPDATE SET consented = EXCLUDED.consented, updated_at = EXCLUDED.updated_at;
END $$;
