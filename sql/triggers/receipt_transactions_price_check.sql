-- A credit whose Apple price differs from the company's own price list (receipt_product_prices, for the product and
-- the currency Apple charged in) is an event of kind price_mismatch: the price was changed in App Store Connect and
-- not here, or the other way round. Never a rejection: Apple charged what it charged. Every such credit is also a row
-- of view receipt_price_mismatches. Only credits that carry a price (receipts carry none) and a listed product.
CREATE OR REPLACE FUNCTION receipt_transactions_price_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_listed numeric;
BEGIN
    SELECT p.price INTO v_listed FROM receipt_product_prices p
    WHERE p.product_id = NEW.product_id AND p.currency = NEW.currency;
    IF FOUND AND v_listed IS DISTINCT FROM NEW.price THEN
        PERFORM receipt_event(pg_catalog.jsonb_build_object(
            'kind', 'price_mismatch', 'user_id', NEW.user_id, 'order_id', NEW.order_id, 'bundle_id', NEW.bundle_id,
            'environment', NEW.environment, 'transaction_id', NEW.transaction_id,
            'original_transaction_id', NEW.original_transaction_id, 'product_id', NEW.product_id,
            'effective_at', NEW.purchase_date,
            'reason', pg_catalog.format('Apple charged %s %s, the price list says %s %s (storefront %s)',
                                        NEW.price, NEW.currency, v_listed, NEW.currency,
                                        coalesce(NEW.storefront, 'unknown')),
            'ledger_id', NEW.id, 'job_id', NEW.job_id, 'notification_id', NEW.notification_id));
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER receipt_transactions_price_check AFTER INSERT ON receipt_transactions
    FOR EACH ROW WHEN (NEW.price IS NOT NULL AND NEW.currency IS NOT NULL)
    EXECUTE FUNCTION receipt_transactions_price_check();
