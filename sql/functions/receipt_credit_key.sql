-- The credit key of a purchase (docs/architecture.md, rule 5): the key the ledger holds once per environment.
-- Per transaction by default; per purchase chain (original_transaction_id) for non-consumables, so a restore cannot
-- pay again; per subscription period (web_order_line_item_id) for auto-renewables, so a restore or a renewal seen
-- twice cannot pay again. p_kind is the product's kind in receipt_products (NULL when it is not listed).
-- A plain SQL expression, IMMUTABLE: the planner inlines it into the statements that call it.
CREATE OR REPLACE FUNCTION receipt_credit_key(p_kind text, p_transaction_id text, p_original_transaction_id text,
                                              p_web_order_line_item_id text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_kind
        WHEN 'non_consumable' THEN coalesce(nullif(p_original_transaction_id, ''), p_transaction_id)
        WHEN 'auto_renewable' THEN coalesce('wol:' || nullif(p_web_order_line_item_id, ''), p_transaction_id)
        ELSE p_transaction_id
    END
$$;
