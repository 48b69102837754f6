import PostgresClient

/// Functions an upgrade added, or re-created under a new signature, that no role may call yet.
///
/// `migrate` takes PUBLIC's EXECUTE away from every SECURITY DEFINER function of receipt-worker (sql/privileges.sql);
/// deploy/sql/roles.sql grants each to its role. Between the two, a function new in this version is callable by its
/// owner alone: this version's workers and API layer get `permission denied` calling it (the previous release's never
/// call it, so they go on). `migrate` names such functions and the fix.
extension Migrator {
    /// receipt-worker's SECURITY DEFINER functions (picked as sql/privileges.sql picks them; trigger functions aside,
    /// which nobody calls) that no role but their owner may execute, in a database where deploy/sql/roles.sql has run
    /// (role `receipt_worker` exists). Empty before roles.sql's first run, and after each.
    public static func ungrantedFunctions(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.query(
            """
            SELECT p.oid::pg_catalog.regprocedure::text AS function
            FROM pg_catalog.pg_proc p
            JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = 'receipt_worker')
              AND n.nspname = $1
              AND p.prosecdef
              AND p.prorettype <> 'pg_catalog.trigger'::pg_catalog.regtype
              AND (p.proname LIKE 'receipt\\_%'
                   OR p.proname IN ('enqueue_receipt', 'enqueue_transaction', 'mark_verdict_delivered',
                                    'mark_event_delivered', 'receive_notification', 'set_customer_consent',
                                    'record_consumption', 'answer_refund_request', 'register_account_token',
                                    'expect_purchase', 'claim_purchase'))
              AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                              WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                                AND d.deptype = 'e')
              AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(
                                          coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                              WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner)
            ORDER BY 1
            """,
            [schema]
        )
        return rows.rows.compactMap { $0.first ?? nil }
    }

    /// The warning for `ungrantedFunctions`' answer, naming the fix; nil when it is empty.
    public static func ungrantedFunctionsWarning(_ functions: [String]) -> String? {
        guard !functions.isEmpty else { return nil }
        return "WARNING: no role may call \(functions.joined(separator: ", ")) yet (new or re-created by this "
            + "version): this version's workers and API layer get permission denied calling it until "
            + "deploy/sql/roles.sql runs again. Fix: apply deploy/sql/roles.sql as the owner now (workers of the "
            + "previous release are not affected)"
    }
}
