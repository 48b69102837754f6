-- Compares Apple's in-app purchase sales of one report day with the Production ledger, stores the run and its
-- differences (receipt_reconciliations, receipt_reconciliation_lines), records an event of kind
-- reconciliation_differences when there are any (one per report day and set of differences: a run that finds what an
-- earlier run of the day found records none), and returns the run's counts. docs/reconciliation.md.
--
-- p_report_date: Apple's day. Apple's days follow Pacific Time (PST/PDT, America/Los_Angeles) for worldwide
--   agreements, so the ledger's window is that day's midnight to the next midnight in America/Los_Angeles.
-- p_source: file or api (where the report came from).
-- p_lines: Apple's in-app purchase lines of the day, a JSON array of
--   {"sku": text, "country": alpha-2, "currency": ISO 4217, "price": decimal text, "units": integer}
--   (units negative on refunds; the price is grouped as its absolute value, so a refund line meets its sale), and
--   optionally "line": the line's number in Apple's file, named in the error about a line refused. At most 1,000,000
--   lines (SQLSTATE 54000 past that: Apple's daily report has one line per product, country and price). Units of at
--   most 15 digits, and all of them added up by their size within a bigint (SQLSTATE 22023 past that, naming the line).
--
-- Both sides are grouped by (product, country, customer currency, customer price): Apple's SKU is our product id
-- through receipt_products.sku, else the SKU itself; the ledger's credits in the window (purchase date, else the
-- credit's date) count their quantity, its revocations in the window (not Family Sharing) subtract it, both at the
-- ledger's price and currency and in the country of its storefront. Family Sharing copies (FAMILY_SHARED) are not
-- sales and are left out. A product with a credit or revocation in the window whose country, currency or price the
-- ledger does not know (an app receipt carries none) is compared as one total per product.
--   missing_in_ledger  Apple sold it (net units), nothing here credited it
--   missing_in_report  credited here, Apple reports no sale of it
--   unit_mismatch      both, with different net units
--   price_mismatch     Apple's customer price differs from receipt_product_prices for the product and currency when
--                      listed; else Apple sold at one price and the ledger credited the same product, country and
--                      currency at another (expected_price: the list's, else the ledger's)
-- One transaction: the function's caller's.
CREATE OR REPLACE FUNCTION receipt_reconcile(p_report_date date, p_source text, p_lines jsonb)
RETURNS TABLE (run_id bigint, apple_rows integer, ledger_rows integer, differences integer)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_start  timestamptz;
    v_end    timestamptz;
    v_run    bigint;
    v_bad    record;
    v_apple  integer;
    v_ledger integer;
    v_diff   integer;
    v_kinds  text;
BEGIN
    IF p_report_date IS NULL THEN
        RAISE EXCEPTION 'receipt_reconcile: the report date is missing' USING ERRCODE = '22023';
    END IF;
    IF p_source IS NULL OR p_source NOT IN ('file', 'api') THEN
        RAISE EXCEPTION 'receipt_reconcile: the source must be file or api, got %', coalesce(p_source, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF p_lines IS NULL OR pg_catalog.jsonb_typeof(p_lines) <> 'array' THEN
        RAISE EXCEPTION 'receipt_reconcile: the report lines must be a JSON array' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(p_lines) > 1000000 THEN
        RAISE EXCEPTION 'receipt_reconcile: % report lines, over the limit of 1000000 in-app purchase lines a day',
                        pg_catalog.jsonb_array_length(p_lines)
            USING ERRCODE = '54000', HINT = 'Apple''s daily report has one line per product, country and price.';
    END IF;
    -- Every line checked before any is used: the first bad one is named.
    SELECT l.n, l.e, l.e ->> 'line' AS file_line INTO v_bad
    FROM pg_catalog.jsonb_array_elements(p_lines) WITH ORDINALITY AS l (e, n)
    WHERE pg_catalog.jsonb_typeof(l.e) <> 'object'
       OR pg_catalog.jsonb_typeof(l.e -> 'sku') IS DISTINCT FROM 'string' OR l.e ->> 'sku' = ''
       OR pg_catalog.length(l.e ->> 'sku') > 256
       OR pg_catalog.jsonb_typeof(l.e -> 'country') IS DISTINCT FROM 'string'
       OR NOT (l.e ->> 'country') ~ '^[A-Z0-9]{2,3}$'
       OR pg_catalog.jsonb_typeof(l.e -> 'currency') IS DISTINCT FROM 'string'
       OR NOT (l.e ->> 'currency') ~ '^[A-Z]{3}$'
       OR pg_catalog.jsonb_typeof(l.e -> 'price') IS DISTINCT FROM 'string'
       OR NOT (l.e ->> 'price') ~ '^-?[0-9]{1,15}(\.[0-9]{1,6})?$'
       OR pg_catalog.jsonb_typeof(l.e -> 'units') IS DISTINCT FROM 'number'
       OR NOT (l.e ->> 'units') ~ '^-?[0-9]{1,15}$'
    ORDER BY l.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'receipt_reconcile: report line % is not {sku, country, currency, price, units}: %',
                        CASE WHEN v_bad.file_line ~ '^[0-9]{1,10}$'
                             THEN pg_catalog.format('%s (line %s of the file)', v_bad.n, v_bad.file_line)
                             ELSE v_bad.n::text END,
                        pg_catalog.left(v_bad.e::text, 200)
            USING ERRCODE = '22023';
    END IF;
    -- Every sum of units formed below (per product, country, currency and price, or per product) is at most the sum
    -- of the lines' units by their size, and is stored in a bigint: that sum must fit one. Past it the report is bad
    -- input (22023, naming the line where the units passed it), not a bigint overflow (22003) half-way through.
    SELECT s.n, s.file_line INTO v_bad
    FROM (SELECT l.n, l.e ->> 'line' AS file_line,
                 pg_catalog.sum(pg_catalog.abs((l.e ->> 'units')::numeric)) OVER (ORDER BY l.n) AS running
          FROM pg_catalog.jsonb_array_elements(p_lines) WITH ORDINALITY AS l (e, n)) s
    WHERE s.running > 9223372036854775807::numeric
    ORDER BY s.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'receipt_reconcile: report line %: its units bring the report''s units past % (every '
                        'line''s units added up, refunds by their size)',
                        CASE WHEN v_bad.file_line ~ '^[0-9]{1,10}$'
                             THEN pg_catalog.format('%s (line %s of the file, column Units)', v_bad.n, v_bad.file_line)
                             ELSE v_bad.n::text || ' (units)' END,
                        9223372036854775807
            USING ERRCODE = '22023';
    END IF;

    v_start := p_report_date::timestamp AT TIME ZONE 'America/Los_Angeles';
    v_end := (p_report_date + 1)::timestamp AT TIME ZONE 'America/Los_Angeles';
    v_apple := pg_catalog.jsonb_array_length(p_lines);
    INSERT INTO receipt_reconciliations (report_date, source, window_start, window_end, apple_rows, ledger_rows,
                                         differences)
    VALUES (p_report_date, p_source, v_start, v_end, v_apple, 0, 0)
    RETURNING id INTO v_run;

    WITH apple_lines AS (
        SELECT l.e ->> 'sku' AS sku, l.e ->> 'country' AS country, l.e ->> 'currency' AS currency,
               pg_catalog.abs((l.e ->> 'price')::numeric) AS price, (l.e ->> 'units')::bigint AS units
        FROM pg_catalog.jsonb_array_elements(p_lines) AS l (e)
    ), apple AS (
        SELECT coalesce(p.product_id, a.sku) AS product_id, min(a.sku) AS sku, a.country, a.currency, a.price,
               sum(a.units) AS units
        FROM apple_lines a LEFT JOIN receipt_products p ON p.sku = a.sku
        GROUP BY 1, a.country, a.currency, a.price
    ), ledger_rows AS (
        SELECT t.product_id, receipt_country_alpha2(t.storefront) AS country, t.currency, t.price,
               t.quantity::bigint AS units
        FROM receipt_transactions t
        WHERE t.environment = 'Production' AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
          AND coalesce(t.purchase_date, t.credited_at) >= v_start AND coalesce(t.purchase_date, t.credited_at) < v_end
        UNION ALL
        SELECT t.product_id, receipt_country_alpha2(t.storefront), t.currency, t.price, -t.quantity::bigint
        FROM receipt_transactions t
        WHERE t.environment = 'Production' AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
          AND t.revoked_at >= v_start AND t.revoked_at < v_end
          AND t.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE'
    ), coarse AS (        -- products the ledger cannot place by country and price
        SELECT DISTINCT r.product_id FROM ledger_rows r
        WHERE r.country IS NULL OR r.currency IS NULL OR r.price IS NULL
    ), ledger AS (
        SELECT r.product_id, r.country, r.currency, r.price, sum(r.units) AS units
        FROM ledger_rows r WHERE r.product_id NOT IN (SELECT c.product_id FROM coarse c)
        GROUP BY 1, 2, 3, 4
    ), listed AS (
        SELECT pp.product_id, pp.currency, pp.price FROM receipt_product_prices pp
    ), joined AS (
        SELECT coalesce(a.product_id, l.product_id) AS product_id, a.sku, coalesce(a.country, l.country) AS country,
               coalesce(a.currency, l.currency) AS currency, coalesce(a.price, l.price) AS price,
               a.units AS apple_units, l.units AS ledger_units
        FROM (SELECT * FROM apple WHERE apple.product_id NOT IN (SELECT c.product_id FROM coarse c)) a
        FULL JOIN ledger l
          ON l.product_id = a.product_id AND l.country = a.country AND l.currency = a.currency AND l.price = a.price
    ), unmatched AS (
        SELECT * FROM joined j WHERE coalesce(j.apple_units, 0) <> coalesce(j.ledger_units, 0)
    ), repriced AS (      -- Apple at one price, the ledger at another: same product, country and currency, no list
        SELECT a.product_id, a.sku, a.country, a.currency, a.price, a.apple_units,
               sum(l.ledger_units) AS ledger_units, min(l.price) AS expected_price
        FROM unmatched a
        JOIN unmatched l ON l.apple_units IS NULL AND l.product_id = a.product_id AND l.country = a.country
                        AND l.currency = a.currency
        WHERE a.ledger_units IS NULL
          AND NOT EXISTS (SELECT FROM listed p WHERE p.product_id = a.product_id AND p.currency = a.currency)
        GROUP BY 1, 2, 3, 4, 5, 6
    ), found AS (
        SELECT 'price_mismatch' AS kind, r.product_id, r.sku, r.country, r.currency, r.price, r.expected_price,
               r.apple_units, r.ledger_units
        FROM repriced r
        UNION ALL
        SELECT CASE WHEN u.ledger_units IS NULL THEN 'missing_in_ledger'
                    WHEN u.apple_units IS NULL THEN 'missing_in_report'
                    ELSE 'unit_mismatch' END,
               u.product_id, u.sku, u.country, u.currency, u.price, NULL, u.apple_units, u.ledger_units
        FROM unmatched u
        WHERE NOT EXISTS (
            SELECT FROM repriced r
            WHERE r.product_id = u.product_id AND r.country = u.country AND r.currency = u.currency
              AND ((u.ledger_units IS NULL AND r.price = u.price) OR u.apple_units IS NULL))
        UNION ALL
        SELECT CASE WHEN coalesce(s.apple_units, 0) = 0::numeric THEN 'missing_in_report'
                    WHEN coalesce(s.ledger_units, 0) = 0::numeric THEN 'missing_in_ledger'
                    ELSE 'unit_mismatch' END,
               s.product_id, s.sku, NULL, NULL, NULL, NULL, s.apple_units, s.ledger_units
        FROM (
            SELECT c.product_id,
                   (SELECT min(a.sku) FROM apple a WHERE a.product_id = c.product_id) AS sku,
                   (SELECT sum(a.units) FROM apple a WHERE a.product_id = c.product_id) AS apple_units,
                   (SELECT sum(r.units) FROM ledger_rows r WHERE r.product_id = c.product_id) AS ledger_units
            FROM coarse c
        ) s
        WHERE coalesce(s.apple_units, 0) <> coalesce(s.ledger_units, 0)
        UNION ALL
        -- Apple's price against the company's own list, whatever the units.
        SELECT 'price_mismatch', a.product_id, a.sku, a.country, a.currency, a.price, p.price, a.units,
               coalesce((SELECT l.units FROM ledger l
                         WHERE l.product_id = a.product_id AND l.country = a.country AND l.currency = a.currency
                           AND l.price = a.price), 0)
        FROM apple a JOIN listed p ON p.product_id = a.product_id AND p.currency = a.currency
        WHERE p.price <> a.price
    )
    INSERT INTO receipt_reconciliation_lines (run_id, kind, product_id, sku, country, currency, customer_price,
                                              expected_price, apple_units, ledger_units)
    SELECT v_run, f.kind, f.product_id,
           coalesce(f.sku, (SELECT p.sku FROM receipt_products p WHERE p.product_id = f.product_id)),
           f.country, f.currency, f.price, f.expected_price, coalesce(f.apple_units, 0), coalesce(f.ledger_units, 0)
    FROM found f
    ORDER BY f.product_id, f.country, f.currency, f.price, f.kind;

    SELECT count(*) INTO v_ledger
    FROM receipt_transactions t
    WHERE t.environment = 'Production' AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
      AND ((coalesce(t.purchase_date, t.credited_at) >= v_start AND coalesce(t.purchase_date, t.credited_at) < v_end)
           OR (t.revoked_at >= v_start AND t.revoked_at < v_end
               AND t.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE'));
    SELECT coalesce(sum(k.n), 0)::integer, pg_catalog.string_agg(k.kind || ' ' || k.n::text, ', ' ORDER BY k.kind)
    INTO v_diff, v_kinds
    FROM (SELECT l.kind, count(*) AS n FROM receipt_reconciliation_lines l WHERE l.run_id = v_run GROUP BY 1) k;

    UPDATE receipt_reconciliations r
    SET ledger_rows = v_ledger, differences = v_diff, finished_at = pg_catalog.clock_timestamp()
    WHERE r.id = v_run;
    -- One event per change of a report day's differences: a run that finds what the day's previous run found (the
    -- same lines, kind by kind) records none; the operator was told then. Compared with the previous run only, so
    -- differences that come back after a run that found others are told again.
    IF v_diff > 0 AND NOT EXISTS (
        SELECT FROM (SELECT p.id, p.differences FROM receipt_reconciliations p
                     WHERE p.report_date = p_report_date AND p.id < v_run
                     ORDER BY p.id DESC LIMIT 1) e
        WHERE e.differences = v_diff
          AND NOT EXISTS (
              (SELECT l.kind, l.product_id, l.sku, l.country, l.currency, l.customer_price, l.expected_price,
                      l.apple_units, l.ledger_units
               FROM receipt_reconciliation_lines l WHERE l.run_id = v_run)
              EXCEPT ALL
              (SELECT l.kind, l.product_id, l.sku, l.country, l.currency, l.customer_price, l.expected_price,
                      l.apple_units, l.ledger_units
               FROM receipt_reconciliation_lines l WHERE l.run_id = e.id)))
    THEN
        PERFORM receipt_event(pg_catalog.jsonb_build_object(
            'kind', 'reconciliation_differences', 'environment', 'Production', 'effective_at', v_start,
            'reason', pg_catalog.format('reconciliation %s of %s (%s): %s differences: %s', v_run, p_report_date,
                                        p_source, v_diff, v_kinds)));
    END IF;
    RETURN QUERY SELECT v_run, v_apple, v_ledger, v_diff;
END $$;
