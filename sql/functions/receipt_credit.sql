-- Credit verified jobs in the ledger (docs/architecture.md, rules 3, 5 and 7): each job with the first of its
-- candidates that neither another order nor another user holds. The crediting rule lives here and only here.
--
-- Returns one row per request: verified with the purchase credited (candidate_index says which candidate, NULL when
-- the order was credited before, by an earlier job since deleted by retention, and nothing new is credited;
-- `credited` is the purchase, left NULL for the first candidate, which the caller already has, unless the ledger gave
-- it another expires_date_ms: a non-renewing subscription's period, below), or
-- rejected: refunded when every candidate is known revoked (below), owned_by_other_user when a candidate was passed
-- over because its purchase chain belongs to another user, else already_credited.
--
-- What is known of revocations (docs/architecture.md, rule 14): a candidate that Apple said, in a notification applied
-- here, is revoked (receipt_known_revocation(): refunded, or its Family Sharing revoked, and not reinstated since) is
-- passed over, whatever copy of it the job brings: a signed transaction kept from before the refund is genuine. The
-- notification takes the lock below exclusively before it records that and looks for the purchase in the ledger; this
-- call holds it shared until its transaction ends, so either the notification finds the credit (and revokes it) or
-- the credit finds the notification's entry, never neither.
--
-- Set-based, in rounds: round n tries every open request's n-th candidate in one statement (the chain's owner row,
-- which serialises concurrent credits of one chain, then the ledger row where the chain is the request's user's).
-- Usually every job is credited in the first round; the requests left over are looked at in a second statement
-- (the holder of the key, the chain's owner, an earlier credit of the order) and go on to their next candidate.
-- The ledger's unique key decides by itself: INSERT … ON CONFLICT uses its index whatever the planner thinks.
--
-- Non-renewing subscriptions (receipt_products.duration set): Apple gives them no expiry, so the ledger row's
-- expires_date is computed. A period starts at the purchase, or when the user's latest unrevoked period of the same
-- product and environment ends if that is later, and lasts `duration`: consecutive purchases stack. Two credits of
-- one user and product must not both read the same latest period: across transactions a lock per (environment,
-- product, user), taken in a statement of its own before the rounds (so the rounds' statements see what the holder
-- before committed); within a batch, one such purchase per user and product per round, the earliest first, the
-- others waiting a round. All of it only when the catalog has durations: otherwise the rounds are as they were.
CREATE OR REPLACE FUNCTION receipt_credit(p_requests receipt_credit_request[])
RETURNS TABLE (ord integer, job_id bigint, state text, reason text, credit_key text, credited jsonb,
               candidate_index integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_open        receipt_credit_request[] := coalesce(p_requests, '{}');
    v_ords        integer[];
    v_jobs        bigint[];
    v_keys        text[];
    v_purchases   jsonb[];
    v_done        jsonb;
    v_requests    jsonb;
    v_expiries    jsonb;
    v_stacking    boolean := EXISTS (SELECT 1 FROM receipt_products WHERE duration IS NOT NULL);
BEGIN
    -- 1380667990 is 'RKRV' in ASCII (receipt_notification_apply() takes it exclusively). In a statement of its own,
    -- so the rounds' statements see what a notification that held it committed.
    IF cardinality(v_open) > 0 THEN
        PERFORM pg_advisory_xact_lock_shared(1380667990, 0);
    END IF;
    IF v_stacking THEN
        -- Every (environment, product, user) this call may stack on, locked in one order (no deadlock between two
        -- calls), until the transaction ends. The two-key form: its own key space, apart from migrate's lock.
        -- 1381192779 is 'RSTK' in ASCII.
        PERFORM pg_advisory_xact_lock(1381192779, hashtext(s.env || '/' || s.product_id || '/' || s.user_id))
        FROM (SELECT DISTINCT o.environment AS env, p.product_id, o.user_id
              FROM unnest(v_open) o
              CROSS JOIN LATERAL jsonb_array_elements(o.candidates) c
              JOIN receipt_products p ON p.product_id = c->>'product_id' AND p.duration IS NOT NULL
              ORDER BY 1, 2, 3) s;
    END IF;

    WHILE cardinality(v_open) > 0 LOOP
        -- This round's candidates, for orders not credited before.
        WITH attempt AS (
            SELECT o.ord, o.job_id, o.bundle_id, o.order_id, o.user_id, o.environment AS env, o.next,
                   o.candidates->o.next AS candidate,
                   ((o.candidates->o.next)->>'purchase_date_ms')::bigint AS purchase_ms
            FROM unnest(v_open) o
            -- Inlined by the planner (see receipt_known_revocation()): no row when nothing is known.
            LEFT JOIN LATERAL receipt_known_revocation(
                o.environment, o.candidates->o.next->>'transaction_id',
                coalesce(nullif(o.candidates->o.next->>'original_transaction_id', ''),
                         o.candidates->o.next->>'transaction_id'),
                o.candidates->o.next->>'web_order_line_item_id',
                ((o.candidates->o.next)->>'purchase_date_ms')::bigint) known ON true
            WHERE o.next < coalesce(jsonb_array_length(o.candidates), 0)
              AND NOT EXISTS (SELECT 1 FROM receipt_transactions t
                              WHERE t.bundle_id = o.bundle_id AND t.order_id = o.order_id)
              AND known.revoked IS NOT TRUE
        ), keyed AS (
            SELECT a.*,
                   coalesce(nullif(a.candidate->>'original_transaction_id', ''), a.candidate->>'transaction_id')
                       AS original,
                   receipt_credit_key(p.kind, a.candidate->>'transaction_id',
                                      a.candidate->>'original_transaction_id',
                                      a.candidate->>'web_order_line_item_id') AS credit_key,
                   p.duration
            FROM attempt a
            LEFT JOIN receipt_products p ON p.product_id = a.candidate->>'product_id'
        ), owned AS (
            INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
            SELECT k.env, k.original, k.user_id FROM keyed k
            ORDER BY k.env, k.original, k.ord
            ON CONFLICT DO NOTHING
            RETURNING environment, original_transaction_id, user_id
        ), credited AS (
            -- Where the chain is the user's: its owner row was inserted just now (`owned`; this statement cannot
            -- see it in the table), or was there before.
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              web_order_line_item_id, product_id, quantity, bundle_id, order_id,
                                              user_id, job_id, purchase_date, expires_date, in_app_ownership_type,
                                              price, currency, storefront, offer_type, offer_discount_type,
                                              transaction_reason, billing_plan_type, signed_at, storefront_id)
            SELECT k.env, k.credit_key, k.candidate->>'transaction_id', k.original,
                   nullif(k.candidate->>'web_order_line_item_id', ''), k.candidate->>'product_id',
                   coalesce((k.candidate->>'quantity')::integer, 1), k.bundle_id, k.order_id, k.user_id, k.job_id,
                   to_timestamp(k.purchase_ms / 1000.0::double precision),
                   CASE WHEN k.duration IS NULL
                            THEN to_timestamp((k.candidate->>'expires_date_ms')::bigint / 1000.0::double precision)
                        -- A stacked period: from the purchase, or from the end of the latest unrevoked one if later.
                        ELSE greatest(to_timestamp(k.purchase_ms / 1000.0::double precision),
                                      (SELECT max(t.expires_date) FROM receipt_transactions t
                                       WHERE t.user_id = k.user_id AND t.product_id = k.candidate->>'product_id'
                                         AND t.environment = k.env AND t.revoked_at IS NULL))
                             + k.duration
                   END,
                   nullif(k.candidate->>'in_app_ownership_type', ''),
                   -- Apple's price in milliunits; the ledger keeps currency units.
                   round((k.candidate->>'price_milliunits')::numeric / 1000, 3), nullif(k.candidate->>'currency', ''),
                   nullif(k.candidate->>'storefront', ''), (k.candidate->>'offer_type')::integer,
                   nullif(k.candidate->>'offer_discount_type', ''), nullif(k.candidate->>'transaction_reason', ''),
                   -- The billing plan, and when Apple signed the transaction (receipt_subscription_credited()).
                   nullif(k.candidate->>'billing_plan_type', ''),
                   to_timestamp((k.candidate->>'signed_date_ms')::bigint / 1000.0::double precision),
                   nullif(k.candidate->>'storefront_id', '')  -- issue 38
            FROM keyed k
            WHERE ((k.env, k.original, k.user_id) IN (SELECT o.environment, o.original_transaction_id, o.user_id
                                                       FROM owned o)
                   OR (SELECT o.user_id FROM receipt_purchase_owners o
                       WHERE o.environment = k.env AND o.original_transaction_id = k.original) = k.user_id)
              -- A stacked period waits a round while an earlier purchase of the same user and product is credited
              -- in this one (this statement cannot see that row). A CASE, so the batch is scanned for those only.
              AND CASE WHEN k.duration IS NULL THEN true
                       ELSE NOT EXISTS (SELECT 1 FROM keyed e
                                        WHERE e.duration IS NOT NULL AND e.env = k.env AND e.user_id = k.user_id
                                          AND e.candidate->>'product_id' = k.candidate->>'product_id'
                                          AND (coalesce(e.purchase_ms, 0), e.ord)
                                              < (coalesce(k.purchase_ms, 0), k.ord))
                  END
            ORDER BY k.env, k.credit_key, k.ord
            ON CONFLICT DO NOTHING
            RETURNING receipt_transactions.job_id, receipt_transactions.credit_key, receipt_transactions.expires_date
        )
        -- v_expiries: the expiry each credited subscription got in the ledger, when stacking may have computed one.
        SELECT coalesce(array_agg(c.job_id), '{}'), coalesce(array_agg(c.credit_key), '{}'),
               coalesce(jsonb_object_agg(c.job_id::text, true), '{}'),
               coalesce(jsonb_object_agg(c.job_id::text, (extract(epoch FROM c.expires_date) * 1000)::bigint)
                            FILTER (WHERE v_stacking AND c.expires_date IS NOT NULL), '{}')
        INTO v_jobs, v_keys, v_done, v_expiries
        FROM credited c;

        -- Each credited job's request, found through a map by job id: a join of the batch with itself would be a
        -- nested loop here (hash joins are off in receipt_complete, see there), quadratic in the batch.
        SELECT jsonb_object_agg(o.job_id::text, jsonb_build_array(o.ord, o.next, o.position))
        INTO v_requests
        FROM unnest(v_open) WITH ORDINALITY AS o(ord, job_id, bundle_id, order_id, user_id, environment, candidates,
                                                  next, saw_owner, position);
        -- The purchase credited; with the ledger's expiry where that is not the candidate's own (a stacked period).
        RETURN QUERY
        SELECT (r.request->>0)::integer, c.job_id, 'verified'::text, NULL::text, c.credit_key,
               CASE WHEN r.expiry IS NULL THEN
                        CASE WHEN (r.request->>1)::integer = 0 THEN NULL
                             ELSE (v_open[(r.request->>2)::integer]).candidates->((r.request->>1)::integer) END
                    ELSE (SELECT CASE WHEN r.expiry IS DISTINCT FROM x.candidate->'expires_date_ms'
                                          THEN x.candidate || jsonb_build_object('expires_date_ms', r.expiry)
                                      WHEN (r.request->>1)::integer > 0 THEN x.candidate END
                          FROM (SELECT (v_open[(r.request->>2)::integer]).candidates->((r.request->>1)::integer)
                                           AS candidate) x)
               END,
               (r.request->>1)::integer
        FROM unnest(v_jobs, v_keys) AS c(job_id, credit_key)
        CROSS JOIN LATERAL (SELECT v_requests->(c.job_id::text) AS request, v_expiries->(c.job_id::text) AS expiry) r;
        EXIT WHEN cardinality(v_jobs) = cardinality(v_open);

        -- The others: an order credited before is verified with that credit; a key another order holds, or a chain
        -- another user owns, sends the request on to its next candidate. A key nobody holds on a chain the user
        -- owns means the insert met a row that is gone again (its transaction rolled back): the same candidate is
        -- tried again in the next round.
        WITH looked AS (
            SELECT o.*,
                   coalesce(nullif(o.candidates->o.next->>'original_transaction_id', ''),
                            o.candidates->o.next->>'transaction_id') AS original,
                   receipt_credit_key(p.kind, o.candidates->o.next->>'transaction_id',
                                      o.candidates->o.next->>'original_transaction_id',
                                      o.candidates->o.next->>'web_order_line_item_id') AS key,
                   prior.credit_key AS prior_key, prior.purchase AS prior_purchase
            FROM unnest(v_open) o
            LEFT JOIN receipt_products p ON p.product_id = o.candidates->o.next->>'product_id'
            LEFT JOIN LATERAL (
                SELECT t.credit_key, jsonb_strip_nulls(jsonb_build_object(
                           'transaction_id', t.transaction_id, 'original_transaction_id', t.original_transaction_id,
                           'web_order_line_item_id', t.web_order_line_item_id, 'product_id', t.product_id,
                           'quantity', t.quantity,
                           'purchase_date_ms', (extract(epoch FROM t.purchase_date) * 1000)::bigint,
                           'expires_date_ms', (extract(epoch FROM t.expires_date) * 1000)::bigint,
                           'in_app_ownership_type', t.in_app_ownership_type)) AS purchase
                FROM receipt_transactions t
                WHERE t.bundle_id = o.bundle_id AND t.order_id = o.order_id
                ORDER BY t.id LIMIT 1
            ) prior ON true
            WHERE v_done->(o.job_id::text) IS NULL
        ), judged AS (
            SELECT l.*,
                   -- Taken: nothing left, its key held, or known revoked (passed over, as in `attempt`).
                   l.candidates->l.next IS NULL
                       OR EXISTS (SELECT 1 FROM receipt_transactions t
                                  WHERE t.environment = l.environment AND t.credit_key = l.key)
                       OR receipt_known_revoked(l.environment, l.candidates->l.next->>'transaction_id', l.original,
                                                l.candidates->l.next->>'web_order_line_item_id',
                                                (l.candidates->l.next->>'purchase_date_ms')::bigint) AS taken,
                   (SELECT o.user_id FROM receipt_purchase_owners o
                    WHERE o.environment = l.environment AND o.original_transaction_id = l.original)
                       IS DISTINCT FROM l.user_id AS foreign_chain
            FROM looked l
        )
        SELECT coalesce(array_agg(j.ord) FILTER (WHERE j.prior_key IS NOT NULL), '{}'),
               coalesce(array_agg(j.job_id) FILTER (WHERE j.prior_key IS NOT NULL), '{}'),
               coalesce(array_agg(j.prior_key) FILTER (WHERE j.prior_key IS NOT NULL), '{}'),
               coalesce(array_agg(j.prior_purchase) FILTER (WHERE j.prior_key IS NOT NULL), '{}'),
               coalesce(array_agg(ROW(j.ord, j.job_id, j.bundle_id, j.order_id, j.user_id, j.environment,
                                      j.candidates,
                                      CASE WHEN j.taken OR j.foreign_chain THEN j.next + 1 ELSE j.next END,
                                      j.saw_owner OR (NOT j.taken AND j.foreign_chain))::receipt_credit_request
                                  ORDER BY j.ord) FILTER (WHERE j.prior_key IS NULL), '{}')
        INTO v_ords, v_jobs, v_keys, v_purchases, v_open
        FROM judged j;

        RETURN QUERY
        SELECT c.ord, c.job_id, 'verified'::text, NULL::text, c.credit_key, c.purchase, NULL::integer
        FROM unnest(v_ords, v_jobs, v_keys, v_purchases) AS c(ord, job_id, credit_key, purchase);

        -- Nothing left to credit: refunded when Apple revoked every candidate (none was then looked at further).
        RETURN QUERY
        SELECT o.ord, o.job_id, 'rejected'::text,
               CASE WHEN o.saw_owner THEN 'owned_by_other_user'
                    WHEN (SELECT bool_and(receipt_known_revoked(
                                     o.environment, c->>'transaction_id',
                                     coalesce(nullif(c->>'original_transaction_id', ''), c->>'transaction_id'),
                                     c->>'web_order_line_item_id', (c->>'purchase_date_ms')::bigint))
                          FROM jsonb_array_elements(o.candidates) c) THEN 'refunded'
                    ELSE 'already_credited' END,
               NULL::text, NULL::jsonb, NULL::integer
        FROM unnest(v_open) o
        WHERE o.next >= coalesce(jsonb_array_length(o.candidates), 0);

        SELECT coalesce(array_agg(o ORDER BY o.ord), '{}') INTO v_open
        FROM unnest(v_open) o
        WHERE o.next < coalesce(jsonb_array_length(o.candidates), 0);
    END LOOP;
END $$;
