#if os(Linux)
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// Issue 22, attacks 1 to 3, tried as a `receipt_api` member would, on a real PostgreSQL with deploy/sql/roles.sql
/// applied: a function planted in schema public, a temporary table in place of ours, a session setting raising the
/// size limit. Each one is refused or comes to nothing; and what stops each is checked on its own (the search_path of
/// every SECURITY DEFINER function, roles.sql's REVOKEs, the warnings of `migrate` and `status`, the schema check).
/// A cluster per test: roles are cluster-wide.
@Suite("SQL privileges: issue 22's attacks 1-3 fail under receipt_api", .serialized, .ownThread)
struct SQLPrivilegeAttackTests {
    /// What every SECURITY DEFINER function must run with (proconfig).
    static let pinnedSearchPath = "search_path=pg_catalog, public, pg_temp"

    /// A JWS in compact form whose header and payload are JSON objects (enqueue_transaction() takes its shape).
    static func jwsShaped(payload: String = #"{"a":1}"#) -> String {
        "eyJhbGciOiJFUzI1NiJ9." + base64url(payload) + ".c2ln"
    }

    /// A database set up by roles.sql in which PUBLIC may create in public again (as PostgreSQL 14 sets one up, or
    /// a GRANT re-opened), the API role's session, and public.attack_log, where each planted object records who it
    /// ran as.
    static func plantingWorld() throws -> (world: ProcessWorld, api: PostgresConnection) {
        let world = try RolesTests.worldWithRoles()
        try world.query("GRANT CREATE ON SCHEMA public TO PUBLIC")
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        try api.execute("CREATE TABLE public.attack_log (who text, what text); GRANT INSERT ON public.attack_log TO PUBLIC")
        return (world, api)
    }

    static func base64url(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test("every SECURITY DEFINER function runs with search_path = pg_catalog, public, pg_temp")
    func definersPinTheirSearchPath() throws {
        let connection = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { connection.close() }
        let definers = try connection.query(
            """
            SELECT p.oid::regprocedure::text AS function, coalesce(array_to_string(p.proconfig, '|'), '') AS config
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')
            ORDER BY 1
            """
        )
        let names = Set(definers.rows.compactMap { $0[0]?.split(separator: "(").first.map(String.init) })
        // The ones the API role, operators and retention call, and the unlink trigger: all of them must be there.
        let known: Set = [
            "enqueue_receipt", "enqueue_transaction", "receive_notification", "mark_verdict_delivered",
            "mark_event_delivered", "receipt_requeue", "receipt_requeue_dead", "receipt_requeue_dead_notifications",
            "receipt_prune", "receipt_jobs_unlink", "receipt_reconcile",
        ]
        #expect(known.isSubset(of: names), "SECURITY DEFINER functions: \(names.sorted())")
        for row in definers.rows {
            #expect(row[1] == Self.pinnedSearchPath, "\(row[0] ?? "?") runs with \(row[1] ?? "no setting")")
        }
    }

    @Test("attack 1: a function planted in public (PUBLIC may create there, as in PostgreSQL 14) never runs as the owner")
    func plantedOverloadsDoNotRunAsOwner() throws {
        // roles.sql took CREATE away; a database set up as PostgreSQL 14 sets one up (or re-granted) has it back.
        let (world, api) = try Self.plantingWorld()
        defer { api.close() }
        // Each overload takes the argument types the definer paths pass, so it beats the built-in (convert_to(text,
        // name), convert_from(bytea, name), the variadic format(text, "any")) whatever the order of search_path.
        // Each records who it ran as, then does the built-in's work, as a quiet attacker would.
        try api.execute(
            """
            CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, 'convert_to');
                RETURN pg_catalog.convert_to($1, $2::name);
            END $$;
            CREATE FUNCTION public.convert_from(bytea, text) RETURNS text LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, 'convert_from');
                RETURN pg_catalog.convert_from($1, $2::name);
            END $$;
            CREATE FUNCTION public.format(text, integer, bigint) RETURNS text LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, 'format');
                RETURN pg_catalog.format($1, $2, $3);
            END $$;
            """
        )
        // The plant works where it can: called from the attacker's own session, convert_to is the planted one.
        _ = try api.query("SELECT convert_to('x', 'UTF8')")
        #expect(try world.query("SELECT who, what FROM attack_log").rows == [["api_login", "convert_to"]])

        let notification = try api.query("SELECT receive_notification($1) AS id", [Self.jwsShaped()])[0, "id"]
        let receipt = try api.query("SELECT enqueue_receipt('QUJD', 'attack-1-receipt', 'u', 'pro.monthly', bundle_id => 'com.example.app') AS id")[0, "id"]
        let signed = try api.query(
            "SELECT enqueue_transaction(signed_transaction => $1, order_id => 'attack-1-jws', user_id => 'u', "
                + "product_id => 'pro.monthly', bundle_id => 'com.example.app') AS id",
            [Self.jwsShaped(payload: #"{"b":2}"#)]
        )[0, "id"]
        // Over the limits, so the error messages are formatted (format(text, integer, bigint)).
        let large = try api.query(
            "SELECT enqueue_receipt(repeat('QUJD', 300000), 'attack-1-large', 'u', 'pro.monthly', bundle_id => 'com.example.app') AS id"
        )[0, "id"]
        let largeJWS = Self.jwsShaped(payload: #"{"pad":""# + String(repeating: "x", count: 70_000) + #""}"#)
        let largeSigned = try api.query(
            "SELECT enqueue_transaction(signed_transaction => $1, order_id => 'attack-1-large-jws', user_id => 'u', "
                + "product_id => 'pro.monthly', bundle_id => 'com.example.app') AS id",
            [largeJWS]
        )[0, "id"]

        #expect(try world.query("SELECT who, what FROM attack_log WHERE who <> 'api_login'").rows == [])
        // And the calls did their work, in the real tables.
        #expect(try world.query("SELECT count(*) FROM receipt_notifications WHERE id = $1", [notification]).rows == [["1"]])
        let jobs = try world.query(
            "SELECT state, coalesce(last_error, '') FROM receipt_jobs WHERE id IN ($1, $2, $3, $4) ORDER BY id",
            [receipt, signed, large, largeSigned]
        )
        #expect(jobs.rows == [
            ["queued", ""], ["queued", ""],
            ["rejected", "receipt_data is 1200000 bytes, over the limit of 1048576"],
            ["rejected", "signed_transaction is \(largeJWS.utf8.count) bytes, over the limit of 65536"],
        ])
    }

    @Test("attack 1 on receipt_reconcile(): ||(text, bigint), =(numeric, integer), jsonb_populate_record planted in public never run as the owner")
    func plantedOverloadsDoNotRunInReconcile() throws {
        let (world, api) = try Self.plantingWorld()
        defer { api.close() }
        // Each takes the exact types receipt_reconcile() (and receipt_event(), which it calls) would hand the
        // built-in: text || bigint (the built-in is anytextcat(text, anynonarray)), numeric = integer (the built-in
        // needs the integer cast), jsonb_populate_record(receipt_events, jsonb) (the built-in takes anyelement).
        try api.execute(
            """
            CREATE FUNCTION public.attack_cat(text, bigint) RETURNS text LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, '||');
                RETURN pg_catalog.textcat($1, $2::text);
            END $$;
            CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = public.attack_cat);
            CREATE FUNCTION public.attack_eq(numeric, integer) RETURNS boolean LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, '=');
                RETURN pg_catalog.numeric_eq($1, $2::numeric);
            END $$;
            CREATE OPERATOR public.= (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.attack_eq);
            CREATE FUNCTION public.jsonb_populate_record(receipt_events, jsonb) RETURNS receipt_events
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.attack_log VALUES (current_user, 'jsonb_populate_record');
                RETURN pg_catalog.jsonb_populate_record($1, $2);
            END $$;
            """
        )
        // The plants work where they can: in the attacker's own session each one is the one chosen.
        _ = try api.query(
            "SELECT 'a'::text || 1::bigint AS c, 1::numeric = 1 AS e, "
                + "(jsonb_populate_record(NULL::receipt_events, '{\"kind\": \"x\"}')).kind AS k"
        )
        #expect(try world.query("SELECT what FROM attack_log WHERE who = 'api_login' ORDER BY 1").rows
            == [["="], ["jsonb_populate_record"], ["||"]])

        // A day with a difference per product (both in the string of kinds and counts, and in the event) and a
        // product the ledger cannot place by price (compared per product, with the numeric = 0 comparisons).
        try world.query(
            """
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                product_id, quantity, bundle_id, order_id, user_id, purchase_date)
            VALUES ('Production', 'attack-1-legacy', 'attack-1-legacy', 'attack-1-legacy', 'legacy', 1,
                    'com.example.app', 'attack-1-legacy', 'u', '2026-11-20T12:00:00Z')
            """
        )
        let worker = try PostgresConnection(RolesTests.url(world, as: "worker_login"))
        defer { worker.close() }
        let run = try worker.query(
            "SELECT differences FROM receipt_reconcile('2026-11-20', 'file', $1::jsonb)",
            [#"[{"sku": "lost", "country": "US", "currency": "USD", "price": "0.99", "units": 1}]"#]
        )
        #expect(run.rows == [["2"]])
        #expect(try world.query("SELECT count(*) FROM receipt_events WHERE kind = 'reconciliation_differences'").rows
            == [["1"]])
        let asOwner = try world.query("SELECT who, what FROM attack_log WHERE who <> 'api_login' ORDER BY 2").rows
        #expect(asOwner == [], "ran as the owner: \(asOwner)")
    }

    @Test("attack 2: a temporary table named like ours does not take the SECURITY DEFINER functions' rows")
    func temporaryTablesDoNotShadowOurs() throws {
        let world = try RolesTests.worldWithRoles()
        // roles.sql took TEMP away from PUBLIC; given back to this login, as an operator might for another tool.
        let database = try world.query("SELECT current_database()")[0, "current_database"] ?? ""
        try world.query("GRANT TEMP ON DATABASE \(quoteIdentifier(database)) TO api_login")
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { api.close() }
        try api.execute(
            """
            CREATE TEMP TABLE receipt_notifications (
                id bigserial PRIMARY KEY, signed_payload text, payload_hash text UNIQUE, source text);
            CREATE TEMP TABLE receipt_apps (bundle_id text PRIMARY KEY, app_apple_id bigint);
            INSERT INTO receipt_apps (bundle_id) VALUES ('com.attacker.app');
            """
        )
        let payload = Self.jwsShaped(payload: #"{"attack":2}"#)
        let id = try api.query("SELECT receive_notification($1) AS id", [payload])[0, "id"]
        #expect(try api.query("SELECT count(*) FROM pg_temp.receipt_notifications").rows == [["0"]])
        #expect(
            try world.query("SELECT signed_payload FROM receipt_notifications WHERE id = $1", [id]).rows == [[payload]]
        )
        // The app list is ours too: an app only the temporary table knows is unknown.
        let error = #expect(throws: PostgresError.self) {
            try api.query("SELECT enqueue_receipt('QUJD', 'attack-2', 'u', 'pro.monthly', bundle_id => 'com.attacker.app')")
        }
        #expect(error?.sqlState == "22023", "\(String(describing: error))")
        #expect(error?.message.contains("unknown bundle_id") == true, "\(String(describing: error))")
    }

    @Test("attack 3: a session's SET receipt_worker.max_receipt_bytes does not let a 4 MB receipt in; the owner's setting does")
    func sessionSettingsDoNotRaiseLimits() throws {
        let world = try RolesTests.worldWithRoles()
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { api.close() }
        try api.execute(
            """
            SET receipt_worker.max_receipt_bytes = '1000000000';
            SET receipt_worker.max_signed_transaction_bytes = '1000000000';
            """
        )
        let fourMegabytes = "SELECT enqueue_receipt(repeat('QUJD', 1048576), $1, 'u', 'pro.monthly', bundle_id => 'com.example.app') AS id"
        let receipt = try api.query(fourMegabytes, ["attack-3"])[0, "id"]
        let signedPayload = Self.jwsShaped(payload: #"{"pad":""# + String(repeating: "x", count: 100_000) + #""}"#)
        let signed = try api.query(
            "SELECT enqueue_transaction(signed_transaction => $1, order_id => 'attack-3-jws', user_id => 'u', "
                + "product_id => 'pro.monthly', bundle_id => 'com.example.app') AS id",
            [signedPayload]
        )[0, "id"]
        let jobs = try world.query(
            "SELECT state, reason, last_error, receipt_data IS NULL AND signed_transaction IS NULL FROM receipt_jobs "
                + "WHERE id IN ($1, $2) ORDER BY id",
            [receipt, signed]
        )
        #expect(jobs.rows == [
            ["rejected", "malformed_input", "receipt_data is 4194304 bytes, over the limit of 1048576", "t"],
            ["rejected", "malformed_input",
             "signed_transaction is \(signedPayload.utf8.count) bytes, over the limit of 65536", "t"],
        ])
        // The limits are the owner's: the API role can neither read nor change them.
        for sql in ["SELECT * FROM receipt_settings", "UPDATE receipt_settings SET value = '1000000000'"] {
            let error = #expect(throws: PostgresError.self, "\(sql)") { try api.query(sql) }
            #expect(error?.sqlState == "42501", "\(sql): \(String(describing: error))")
        }
        // The owner raises one with UPDATE receipt_settings (README), and it holds for the next call.
        try world.query(
            "UPDATE receipt_settings SET value = '5000000' WHERE name = 'receipt_worker.max_receipt_bytes'"
        )
        let allowed = try api.query(fourMegabytes, ["attack-3-raised"])[0, "id"]
        #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [allowed]).rows == [["queued"]])
        // A limit must be a positive whole number.
        #expect(throws: PostgresError.self) {
            try world.query("UPDATE receipt_settings SET value = 'lots' WHERE name = 'receipt_worker.max_receipt_bytes'")
        }
    }

    @Test("roles.sql takes CREATE on public and TEMP from PUBLIC; migrate and status warn while another role may create there")
    func schemaCreatorsAreRevokedAndWarnedAbout() throws {
        // The database as PostgreSQL 14 sets one up: PUBLIC may create in public (and make temporary tables).
        let world = try RolesTests.worldWithRoles(beforeRoles: { world in
            try world.query("GRANT CREATE ON SCHEMA public TO PUBLIC")
            let warned = try Self.runMigrate(world)
            #expect(warned.status == 0, "\(warned.errors)")
            #expect(
                warned.errors.contains("WARNING: every role (PUBLIC) may create objects in schema public"),
                "migrate's standard error: \(warned.errors)"
            )
            #expect(warned.errors.contains("REVOKE CREATE ON SCHEMA public FROM PUBLIC"), "\(warned.errors)")
            let status = try Self.runStatus(world, as: nil)
            #expect(status.output.hasPrefix("WARNING: every role (PUBLIC) may create"), "\(status.output)")
        })
        // roles.sql applied (by worldWithRoles), and again: it is idempotent.
        let again = try MigrationTests.psql(
            world.databaseURL, file: TestServer.repositoryRoot.appendingPathComponent("deploy/sql/roles.sql").path
        )
        #expect(again.status == 0, "\(again.output)")
        let privileges = try world.query(
            """
            SELECT has_schema_privilege('api_login', 'public', 'CREATE'),
                   has_database_privilege('api_login', current_database(), 'TEMP'),
                   has_schema_privilege('operator_login', 'public', 'CREATE'),
                   has_database_privilege('worker_login', current_database(), 'TEMP')
            """
        )
        #expect(privileges.rows == [["f", "f", "f", "f"]])
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { api.close() }
        for sql in [
            "CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE sql AS 'SELECT NULL::bytea'",
            "CREATE TEMP TABLE receipt_notifications (id bigint)",
        ] {
            let error = #expect(throws: PostgresError.self, "\(sql)") { try api.query(sql) }
            #expect(error?.sqlState == "42501", "\(sql): \(String(describing: error))")
        }
        // No warning now, from either command.
        let quiet = try Self.runMigrate(world)
        #expect(quiet.status == 0 && !quiet.errors.contains("WARNING"), "\(quiet.errors)")
        let status = try Self.runStatus(world, as: "operator_login")
        #expect(status.status == 0 && status.output.hasPrefix("Jobs by state"), "\(status.output)")

        // A role given CREATE by name is named, members included.
        try world.query("GRANT CREATE ON SCHEMA public TO receipt_api")
        let named = try Self.runStatus(world, as: "operator_login")
        #expect(
            named.output.hasPrefix("WARNING: api_login, receipt_api may create objects in schema public"),
            "\(named.output)"
        )
        #expect(
            named.output.contains(#"REVOKE CREATE ON SCHEMA public FROM "api_login", "receipt_api";"#), "\(named.output)"
        )
    }

    @Test("the warning names a role whose name holds terminal controls with them escaped: it cannot blank itself")
    func hostileRoleNameInTheWarning() throws {
        let world = try ProcessWorld()
        let role = "planter\u{1b}[2K\u{1b}[1A\u{9b}2J\u{202e}"
        try world.query("CREATE ROLE \(quoteIdentifier(role)) NOLOGIN")
        try world.query("GRANT CREATE ON SCHEMA public TO \(quoteIdentifier(role))")
        defer {
            // Roles are the cluster's: gone with the test.
            _ = try? world.query("REVOKE CREATE ON SCHEMA public FROM \(quoteIdentifier(role))")
            _ = try? world.query("DROP ROLE \(quoteIdentifier(role))")
        }
        let migrated = try Self.runMigrate(world)
        let status = try Self.runStatus(world, as: nil)
        for (command, text) in [("migrate", migrated.errors), ("status", status.output)] {
            #expect(text.contains("WARNING: planter\\u{1b}[2K\\u{1b}[1A\\u{9b}2J\\u{202e} may create objects"),
                    "\(command): \(text.debugDescription)")
            for raw in ["\u{1b}", "\u{9b}", "\u{202e}"] {
                #expect(!text.contains(raw), "\(command) printed U+\(String(raw.unicodeScalars.first!.value, radix: 16)) raw")
            }
        }
    }

    @Test("migrate and psql -f sql/apply.sql refuse a database that is not UTF8, naming the fix")
    func migrateRefusesAnotherEncoding() throws {
        let url = try TestServer.get().emptyDatabase()
        let admin = try PostgresConnection(url)
        let name = try admin.query("SELECT current_database()").rows.first?.first ?? nil
        admin.close()
        let server = try PostgresConnection(ConnectionString.replacingDatabase(in: url, with: "postgres"))
        defer { server.close() }
        let ascii = "\(try #require(name))_ascii"
        _ = try server.query("CREATE DATABASE \"\(ascii)\" ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        let asciiURL = ConnectionString.replacingDatabase(in: url, with: ascii)
        let connection = try PostgresConnection(asciiURL)
        defer { connection.close() }
        let error = #expect(throws: QueueError.self) {
            try Migrator(directory: TestServer.sqlDirectory).migrate(connection)
        }
        #expect(error?.code == .wrongEncoding)
        #expect(error?.message.contains("encoding is SQL_ASCII") == true, "\(String(describing: error))")
        #expect(error?.message.contains("ENCODING 'UTF8'") == true, "\(String(describing: error))")
        #expect(try connection.query("SELECT to_regclass('receipt_jobs') IS NULL").rows == [["t"]])

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-d", asciiURL, "-f",
                             TestServer.sqlDirectory + "/apply.sql"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0, "\(text)")
        #expect(text.contains("receipt-worker needs UTF8"), "\(text)")
        #expect(try connection.query("SELECT to_regclass('receipt_jobs') IS NULL").rows == [["t"]])
    }

    @Test("migrate refuses a connection that would create the objects outside schema public, and says how to fix it")
    func migrateRefusesAnotherSchema() throws {
        let url = try TestServer.get().emptyDatabase()
        let connection = try PostgresConnection(url)
        defer { connection.close() }
        try connection.execute("CREATE SCHEMA receipts; SET search_path = receipts")
        let error = #expect(throws: QueueError.self) {
            try Migrator(directory: TestServer.sqlDirectory).migrate(connection)
        }
        #expect(error?.code == .wrongSchema)
        #expect(error?.message.contains("would create them in schema receipts") == true, "\(String(describing: error))")
        #expect(error?.message.contains("search_path") == true, "\(String(describing: error))")
        #expect(try connection.query("SELECT to_regclass('receipt_jobs') IS NULL").rows == [["t"]])

        // psql -f sql/apply.sql refuses too.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-d", url, "-f",
                             TestServer.sqlDirectory + "/apply.sql"]
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["PGOPTIONS": "-c search_path=receipts"]
        ) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0, "\(output)")
        #expect(output.contains("objects live in schema public, but this session creates in receipts"), "\(output)")
        #expect(try connection.query("SELECT to_regclass('receipt_jobs') IS NULL").rows == [["t"]])
    }

    /// `receipt-worker migrate` as the owner (standard error apart).
    static func runMigrate(_ world: ProcessWorld) throws -> (status: Int32?, errors: String) {
        let child = try ChildProcess(["migrate"], environment: world.environment(), separateErrors: true)
        let status = child.wait(timeout: 120)
        return (status, child.errors)
    }

    /// `receipt-worker status` as `login`, or as the owner when nil.
    static func runStatus(_ world: ProcessWorld, as login: String?) throws -> (status: Int32?, output: String) {
        let url = login.map { RolesTests.url(world, as: $0) } ?? world.databaseURL
        let child = try ChildProcess(
            ["status"], environment: world.environment(["DATABASE_URL": url]), separateErrors: true
        )
        let status = child.wait(timeout: 120)
        return (status, child.output)
    }
}
#endif
