-- Applied at the end of every `migrate` (and of `psql -f sql/apply.sql`), in the same transaction.
--
-- PostgreSQL lets PUBLIC (every role of the cluster) execute a function it creates. deploy/sql/roles.sql takes that
-- away and grants each role its own, but it runs as a separate step: between a `migrate` that adds a function that
-- runs with its owner's rights (or re-creates one with a new signature) and the next run of roles.sql, that function
-- would be callable by every role. So `migrate` takes PUBLIC's EXECUTE away from those itself; roles.sql then grants
-- them to receipt_worker, receipt_api and receipt_operator.
-- Functions that run with their caller's rights keep PUBLIC's EXECUTE until roles.sql runs: it gives no right the
-- caller lacks, and the worker's existing functions call the new ones a version adds (receipt_notification_apply
-- calls receipt_notification_event, ...), so taking it away would stop running workers until roles.sql ran.
--
-- Receipt-worker's functions: in schema public, owned by the role applying this, not part of an extension, named
-- receipt_… or one of the API layer's names below. Other functions that share the database are left alone.
DO $$
DECLARE
    f pg_catalog.regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::pg_catalog.regprocedure
        FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public'
          AND p.proowner = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)
          AND p.prosecdef
          AND (p.proname LIKE 'receipt\_%'
               OR p.proname IN ('enqueue_receipt', 'enqueue_transaction', 'enqueue_app_transaction',
                                'mark_verdict_delivered', 'mark_event_delivered', 'receive_notification', 'set_customer_consent',
                                'record_consumption', 'answer_refund_request', 'register_account_token',
                                'expect_purchase', 'claim_purchase'))
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                          WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                            AND d.deptype = 'e')
          AND EXISTS (SELECT FROM pg_catalog.aclexplode(
                                      coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                      WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
    LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON ROUTINE %s FROM PUBLIC', f);
    END LOOP;
END $$;
