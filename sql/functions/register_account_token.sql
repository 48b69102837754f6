-- Tells the service whose appAccountToken is whose (issue 37, lost orders): the UUID the app passes to StoreKit's
-- purchase(options: [.appAccountToken(…)]), which Apple then puts in every transaction and notification of that
-- purchase. A purchase Apple announces with a registered token is credited to its customer even when the app never
-- sends it. A customer may have many tokens (one per order, say); a token belongs to one customer: registering it to
-- another is refused with SQLSTATE RW409 (token_conflict), nothing changed; registering it again is a no-op.
-- bundle_id: the app the token is for, or NULL for every app of ours. Purchases that arrived before the token was
-- registered (receipt_unclaimed_purchases) are credited now; returns how many.
-- SECURITY DEFINER, like enqueue_receipt(): the API layer needs EXECUTE on it and no write right on any table.
CREATE OR REPLACE FUNCTION register_account_token(
    user_id           text,
    app_account_token uuid,
    bundle_id         text DEFAULT NULL
) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT receipt_account_token_register('register_account_token', user_id, app_account_token, bundle_id)
$$;
