-- Records a renewal-date extension before `receipt-worker extend-renewal` sends it to Apple (issue 38), so that every
-- request is kept with its id, who asked (the database login: session_user) and when, whatever Apple answers.
-- p_scope 'one' (Extend a Subscription Renewal Date: p_original_transaction_id) or 'mass' (Extend Subscription
-- Renewal Dates for All Active Subscribers: p_product_id, p_storefronts or NULL for all). Refused, nothing recorded
-- (SQLSTATE 22023, the message naming the fix): days outside 1-90, a reason code outside 0-3, an app not in
-- receipt_apps, a product that is not an auto-renewable subscription known here (receipt_products kind
-- auto_renewable, or a chain of receipt_subscriptions), a request id used before. Returns the request id.
-- SECURITY DEFINER: receipt_operator records requests only through this function and
-- receipt_renewal_extension_result().
CREATE OR REPLACE FUNCTION receipt_renewal_extension_request(
    p_request_identifier text, p_scope text, p_environment text, p_bundle_id text, p_original_transaction_id text,
    p_product_id text, p_storefronts text[], p_days integer, p_reason integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF p_days IS NULL OR p_days NOT BETWEEN 1 AND 90 THEN
        RAISE EXCEPTION 'extend-renewal: % days is outside Apple''s range', coalesce(p_days::text, 'no')
            USING ERRCODE = '22023', HINT = 'give 1 to 90 days';
    END IF;
    IF p_reason IS NULL OR p_reason NOT BETWEEN 0 AND 3 THEN
        RAISE EXCEPTION 'extend-renewal: reason code % is not Apple''s', coalesce(p_reason::text, 'none')
            USING ERRCODE = '22023',
                  HINT = 'give 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or outage)';
    END IF;
    IF p_scope NOT IN ('one', 'mass') OR p_environment NOT IN ('Production', 'Sandbox')
       OR pg_catalog.octet_length(p_request_identifier) NOT BETWEEN 1 AND 128
       OR (p_scope = 'one') <> (p_original_transaction_id IS NOT NULL)
       OR (p_scope = 'mass' AND p_product_id IS NULL)
       OR coalesce(pg_catalog.cardinality(p_storefronts), 0) > 300 THEN
        RAISE EXCEPTION 'extend-renewal: scope %, environment %: not a request this function records', p_scope,
                        p_environment
            USING ERRCODE = '22023', HINT = 'scope one takes an original transaction id, mass a product id';
    END IF;
    IF NOT EXISTS (SELECT FROM receipt_apps a WHERE a.bundle_id = p_bundle_id) THEN
        RAISE EXCEPTION 'extend-renewal: % is not an app of ours (receipt_apps)', p_bundle_id
            USING ERRCODE = '22023', HINT = 'name an app of APPLE_BUNDLE_IDS (--bundle-id)';
    END IF;
    IF p_product_id IS NOT NULL
       AND NOT EXISTS (SELECT FROM receipt_products p
                       WHERE p.product_id = p_product_id AND p.kind = 'auto_renewable')
       AND NOT EXISTS (SELECT FROM receipt_subscriptions s
                       WHERE s.product_id = p_product_id AND s.bundle_id = p_bundle_id) THEN
        RAISE EXCEPTION 'extend-renewal: % is not an auto-renewable subscription known here', p_product_id
            USING ERRCODE = '22023',
                  HINT = 'check the product id, or list it in receipt_products with kind auto_renewable';
    END IF;
    INSERT INTO receipt_renewal_extensions (request_identifier, scope, environment, bundle_id, original_transaction_id,
                                            product_id, storefront_country_codes, extend_by_days, extend_reason_code,
                                            requested_by)
    VALUES (p_request_identifier, p_scope, p_environment, p_bundle_id, p_original_transaction_id, p_product_id,
            p_storefronts, p_days, p_reason, session_user::text)
    ON CONFLICT (request_identifier) DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'extend-renewal: request % was recorded before', p_request_identifier
            USING ERRCODE = '22023', HINT = 'each request gets a new id';
    END IF;
    RETURN p_request_identifier;
END $$;
