import PostgresClient

/// Where receipt-worker's objects live, and who besides their owner could plant objects beside them.
///
/// The SECURITY DEFINER functions run with `search_path = pg_catalog, public, pg_temp`, written out in each file: the
/// objects must be in schema `public`, and no role but the owner may create there, or it could plant a function (an
/// overload of a built-in, say `convert_to(text, text)`) that they would run with the owner's rights.
extension Migrator {
    /// The schema every object is created in, named in the SECURITY DEFINER functions' `search_path`.
    public static let schema = "public"

    /// Throws unless `connection` creates objects in `public` (its `current_schema()`), naming the fix.
    static func checkSchema(_ connection: PostgresConnection) throws {
        // jsonb turns a \uXXXX escape of a character past ASCII into that character only in a UTF8 database
        // (SQL_ASCII refuses it; another encoding may not hold it), and the worker's JSON escapes the C1 and
        // bidirectional controls so.
        let encoding = try connection.query("SELECT pg_catalog.current_setting('server_encoding') AS encoding")[
            0, "encoding"
        ]
        guard encoding == "UTF8" else {
            throw QueueError(
                .wrongEncoding,
                "the database's encoding is \(encoding ?? "unknown"), and receipt-worker needs UTF8 (Apple's text and "
                    + "the JSON it writes): create its database with CREATE DATABASE … ENCODING 'UTF8' TEMPLATE "
                    + "template0, and migrate that one"
            )
        }
        let current = try connection.query("SELECT current_schema() AS schema")[0, "schema"]
        guard current != schema else { return }
        throw QueueError(
            .wrongSchema,
            "receipt-worker's objects live in schema \(schema), but this connection would create them in "
                + (current.map { "schema \($0)" } ?? "no schema (its search_path names none that exists)")
                + ": connect with search_path = \(schema) (remove the setting that changed it: ALTER ROLE … RESET "
                + "search_path, ALTER DATABASE … RESET search_path, or options=-csearch_path=… in DATABASE_URL), "
                + "or use a database of its own"
        )
    }

    /// The roles other than the schema's owner, the owner of receipt-worker's tables (and their members) and
    /// superusers that may create objects in `public`: `["PUBLIC"]` alone when every role may, else their names.
    /// Empty when the schema is as it should be.
    public static func schemaCreators(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.query(
            """
            WITH s AS (
                SELECT n.oid, n.nspowner, EXISTS (
                           SELECT FROM aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
                           WHERE a.grantee = 0 AND a.privilege_type = 'CREATE') AS public_creates
                FROM pg_namespace n WHERE n.nspname = $1
            ), owner AS (
                SELECT c.relowner FROM pg_class c WHERE c.oid = to_regclass(quote_ident($1) || '.receipt_jobs')
            )
            SELECT 'PUBLIC' AS role FROM s WHERE s.public_creates
            UNION ALL
            SELECT r.rolname::text FROM pg_roles r, s
            WHERE NOT s.public_creates AND NOT r.rolsuper
              AND NOT pg_has_role(r.oid, s.nspowner, 'MEMBER')
              AND NOT EXISTS (SELECT FROM owner o WHERE pg_has_role(r.oid, o.relowner, 'MEMBER'))
              AND has_schema_privilege(r.oid, s.oid, 'CREATE')
            ORDER BY 1
            """,
            [schema]
        )
        return rows.rows.compactMap { $0.first ?? nil }
    }

    /// The warning for `schemaCreators`' answer, naming the fix; nil when it is empty.
    public static func schemaCreatorsWarning(_ creators: [String]) -> String? {
        guard !creators.isEmpty else { return nil }
        let who = creators == ["PUBLIC"] ? "every role (PUBLIC)" : creators.joined(separator: ", ")
        let grantees = creators.map { $0 == "PUBLIC" ? $0 : quoteIdentifier($0) }.joined(separator: ", ")
        return "WARNING: \(who) may create objects in schema \(schema), where receipt-worker's SECURITY DEFINER "
            + "functions find theirs: such a role can plant a function they would run with the owner's rights. "
            + "Fix: REVOKE CREATE ON SCHEMA \(schema) FROM \(grantees); (deploy/sql/roles.sql revokes it from PUBLIC)"
    }
}
