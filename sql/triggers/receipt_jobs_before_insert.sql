-- Every new job gets its input's hash (logs and retention use it, never the receipt or signed transaction).
-- Fires inside enqueue_receipt() and enqueue_transaction() (SECURITY DEFINER): built-ins named with pg_catalog.
CREATE OR REPLACE FUNCTION receipt_jobs_before_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF coalesce(NEW.receipt_data, NEW.signed_transaction) IS NOT NULL THEN
        NEW.receipt_hash := pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
            coalesce(NEW.receipt_data, NEW.signed_transaction), 'UTF8')), 'hex');
        NEW.receipt_bytes := pg_catalog.octet_length(coalesce(NEW.receipt_data, NEW.signed_transaction));
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER receipt_jobs_before_insert BEFORE INSERT ON receipt_jobs
    FOR EACH ROW EXECUTE FUNCTION receipt_jobs_before_insert();
