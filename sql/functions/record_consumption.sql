-- For the API layer: how much of a consumable or non-renewing purchase (`transaction_id`, Apple's) the customer used,
-- in milliunits (0 to 100000 = all of it). Sent to Apple as consumptionPercentage when it asks about a refund (never
-- for auto-renewable subscriptions). The latest call wins.
CREATE OR REPLACE FUNCTION record_consumption(transaction_id text, consumption_percentage integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF record_consumption.transaction_id IS NULL OR record_consumption.transaction_id = ''
       OR pg_catalog.octet_length(record_consumption.transaction_id) > 64 THEN
        RAISE EXCEPTION 'record_consumption: give the transaction id Apple assigned (at most 64 bytes)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF record_consumption.consumption_percentage IS NULL
       OR record_consumption.consumption_percentage NOT BETWEEN 0 AND 100000 THEN
        RAISE EXCEPTION 'record_consumption: consumption_percentage is in milliunits, 0 to 100000 (100000 = all), got %',
                        coalesce(record_consumption.consumption_percentage::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO public.receipt_consumption AS c (transaction_id, consumption_percentage, updated_at)
    VALUES (record_consumption.transaction_id, record_consumption.consumption_percentage, pg_catalog.now())
    ON CONFLICT ON CONSTRAINT receipt_consumption_pkey
    DO UPDATE SET consumption_percentage = EXCLUDED.consumption_percentage, updated_at = EXCLUDED.updated_at;
END $$;
