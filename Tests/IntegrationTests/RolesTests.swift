#if os(Linux)
import AppleFixtureFiles
import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// deploy/sql/roles.sql applied to a real PostgreSQL as README says (after migrate, with psql), then every command
/// run under a login role of its group role, and what each role must not do tried and refused. A cluster of its own:
/// roles are cluster-wide.
@Suite("deploy/sql/roles.sql: each command under its role, each forbidden thing refused", .serialized, .ownThread)
struct RolesTests {
    static let roles = ["api_login": "receipt_api", "worker_login": "receipt_worker", "operator_login": "receipt_operator"]

    @Test("enqueue as receipt_api, work and sweep as receipt_worker, status and requeue as receipt_operator", .needsAppleFixtures)
    func commandsUnderTheirRoles() async throws {
        let world = try Self.worldWithRoles()
        let api = Self.url(world, as: "api_login")
        let worker = Self.url(world, as: "worker_login")
        let operatorURL = Self.url(world, as: "operator_login")

        // receipt_api: enqueue_receipt() through `receipt-worker enqueue`.
        let good = Harness.receipt(purchases: [Harness.purchase("roles-1")])
        let flaky = Harness.receipt(purchases: [Harness.purchase("roles-2")], faults: [.status21009, .status21009])
        let goodId = try await Self.enqueue(good, order: "roles-good", url: api)
        let flakyId = try await Self.enqueue(flaky, order: "roles-flaky", url: api)
        world.remember(goodId)
        world.remember(flakyId)
        // receipt_api: an App Store Server Notification taken in (Apple's real TEST notification, for an app of ours).
        let notificationPayload = try AppleFixtureFiles.appleTestNotification()
        try world.query("INSERT INTO receipt_apps (bundle_id) VALUES ('com.Abilities')")
        let apiIntake = try PostgresConnection(api)
        let notificationId = try apiIntake.query("SELECT receive_notification($1) AS id", [notificationPayload])[0, "id"]
        apiIntake.close()

        // receipt_worker: work --drain (registering the apps, claiming, writing, crediting) and sweep with retention.
        let drained = try await Self.run(
            ["work", "--drain"],
            world.environment(["DATABASE_URL": worker, "MAX_ATTEMPTS": "2", "APPSTORE_ONLINE_CHECKS": "off"])
        )
        #expect(drained.status == 0, "\(drained.output.suffix(3000))")
        #expect(!drained.output.contains("permission denied"), "\(drained.output.suffix(3000))")
        #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(goodId)]).rows.first?.first == "verified")
        #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(flakyId)]).rows.first?.first == "dead")
        let swept = try await Self.run(
            ["sweep", "--clear-receipts-after-days", "30", "--delete-after-days", "90"],
            world.environment(["DATABASE_URL": worker])
        )
        #expect(swept.status == 0, "\(swept.output)")
        #expect(swept.output.contains("promoted 0, rescued 0, dead 0, pruned 0"), "\(swept.output)")

        // receipt_operator: status and requeue --dead, recorded under the operator's login.
        let status = try await Self.run(["status"], world.environment(["DATABASE_URL": operatorURL]))
        #expect(status.status == 0, "\(status.output)")
        #expect(status.output.contains("Jobs by state") && status.output.contains("retries_exhausted"), "\(status.output)")
        let requeued = try await Self.run(
            ["requeue", "--dead", "--note", "roles test"], world.environment(["DATABASE_URL": operatorURL])
        )
        #expect(requeued.status == 0, "\(requeued.output)")
        #expect(requeued.output.contains("requeued 1 dead jobs"), "\(requeued.output)")
        let requeuedNotifications = try await Self.run(
            ["requeue", "--dead-notifications"], world.environment(["DATABASE_URL": operatorURL])
        )
        #expect(requeuedNotifications.status == 0, "\(requeuedNotifications.output)")
        #expect(requeuedNotifications.output.contains("requeued 0 dead notifications"), "\(requeuedNotifications.output)")
        #expect(try world.query("SELECT actor FROM receipt_admin_log").rows.map { $0.first ?? nil } == ["operator_login"])

        // The requeued job is verified under the worker role, and the API role takes its verdict.
        let again = try await Self.run(["work", "--drain"], world.environment(["DATABASE_URL": worker]))
        #expect(again.status == 0, "\(again.output.suffix(3000))")
        let apiConnection = try PostgresConnection(api)
        defer { apiConnection.close() }
        let verdicts = try apiConnection.query(
            "SELECT id, state FROM receipt_jobs WHERE finished_at IS NOT NULL AND delivered_at IS NULL ORDER BY id"
        )
        #expect(verdicts.rows == [[String(goodId), "verified"], [String(flakyId), "verified"]])
        #expect(try apiConnection.query("SELECT mark_verdict_delivered($1)", [String(goodId)]).rows == [["t"]])
        #expect(try apiConnection.query("SELECT count(*) FROM receipt_transactions").rows == [["2"]])
        // The notification was applied under the worker role; the API role takes its event.
        let event = try apiConnection.query(
            "SELECT id, kind FROM receipt_events WHERE notification_id = $1 AND delivered_at IS NULL", [notificationId]
        )
        #expect(event.rows.map { $0[1] } == ["test"])
        #expect(try apiConnection.query("SELECT mark_event_delivered($1)", [event[0, "id"]]).rows == [["t"]])
        try world.invariants()
    }

    @Test("what each role must not do is refused: permission denied (42501)")
    func forbidden() async throws {
        let world = try Self.worldWithRoles()
        let id = try world.enqueue(Harness.receipt(purchases: [Harness.purchase("forbidden-1")]), order: "forbidden")
        _ = try world.store.claim(worker: "owner", limit: 1, leaseSeconds: 60)
        try world.query(
            """
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              product_id, quantity, bundle_id, order_id, user_id, purchase_date)
            VALUES ('Production', 'k-1', 't-1', 't-1', 'pro.monthly', 1, 'com.example.app', 'other', 'u', now())
            """
        )
        let refused: [(login: String, what: String, sql: String)] = [
            ("api_login", "reading receipts", "SELECT receipt_data FROM receipt_jobs"),
            ("api_login", "reading the lease", "SELECT lease_token FROM receipt_jobs"),
            ("api_login", "updating jobs", "UPDATE receipt_jobs SET state = 'verified'"),
            ("api_login", "deleting jobs", "DELETE FROM receipt_jobs"),
            ("api_login", "inserting jobs", "INSERT INTO receipt_jobs (bundle_id, order_id, user_id, product_id) VALUES ('a', 'b', 'c', 'd')"),
            ("api_login", "writing the ledger", "UPDATE receipt_transactions SET user_id = 'mallory'"),
            ("api_login", "claiming jobs", "SELECT * FROM receipt_claim('api', 1, 60)"),
            ("api_login", "changing the catalog", "INSERT INTO receipt_products (product_id, kind) VALUES ('x', 'consumable')"),
            // Issue 37: a waiting purchase is support's to give away, and nobody's tokens are the API layer's to list.
            ("api_login", "claiming a waiting purchase", "SELECT claim_purchase('3000000000000001', 'mallory')"),
            ("api_login", "listing every customer's token", "SELECT * FROM receipt_account_tokens"),
            ("api_login", "crediting by hand", "SELECT * FROM receipt_announced_credit('Production', 'a', '{}', 'claim', NULL, NULL, 'mallory')"),
            ("worker_login", "claiming a waiting purchase", "SELECT claim_purchase('3000000000000001', 'mallory')"),
            ("operator_login", "reading receipts", "SELECT receipt_data FROM receipt_jobs"),
            // explain reads jobs, the ledger, notifications, refund requests and unclaimed purchases by column: never
            // the receipts, signed data, the answers sent to Apple or the lease.
            ("operator_login", "reading signed transactions", "SELECT signed_transaction FROM receipt_jobs"),
            ("operator_login", "reading the lease", "SELECT lease_token FROM receipt_jobs"),
            ("operator_login", "reading every column of jobs", "SELECT * FROM receipt_jobs"),
            ("operator_login", "reading signed notifications", "SELECT signed_payload FROM receipt_notifications"),
            ("operator_login", "reading announced purchases' data", "SELECT purchase FROM receipt_unclaimed"),
            ("operator_login", "reading refund answers", "SELECT answer, app_answer FROM receipt_refund_requests"),
            ("operator_login", "updating jobs", "UPDATE receipt_jobs SET attempts = 0"),
            ("operator_login", "reading every column of the ledger", "SELECT * FROM receipt_transactions"),
            ("operator_login", "writing tokens", "DELETE FROM receipt_account_tokens"),
            ("operator_login", "reading entitlements", "SELECT * FROM receipt_entitlements"),
            ("operator_login", "enqueueing", "SELECT enqueue_receipt('QUJD', 'o', 'u', 'p')"),
            ("worker_login", "deleting ledger rows", "DELETE FROM receipt_transactions"),
            ("worker_login", "changing who was credited", "UPDATE receipt_transactions SET user_id = 'mallory'"),
            ("worker_login", "changing the catalog", "INSERT INTO receipt_products (product_id, kind) VALUES ('x', 'consumable')"),
            ("worker_login", "requeueing", "SELECT receipt_requeue(\(id), 'no')"),
            ("worker_login", "creating tables", "CREATE TABLE stolen (x int)"),
            // roles.sql takes CREATE on schema public and TEMP on the database from PUBLIC: no role but the owner can
            // put a function or table where the SECURITY DEFINER functions look (SQLPrivilegeAttackTests).
            ("api_login", "creating functions in public",
             "CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE sql AS 'SELECT NULL::bytea'"),
            ("api_login", "creating temporary tables", "CREATE TEMP TABLE receipt_notifications (id bigint)"),
            ("operator_login", "creating tables in public", "CREATE TABLE public.stolen (x int)"),
            // Issue 38: renewal-date extensions are recorded only through their functions, by operators; the ledger's
            // expiry moves only by the workers' notification path.
            ("operator_login", "rewriting an extension request", "UPDATE receipt_renewal_extensions SET state = 'complete'"),
            ("operator_login", "moving a ledger expiry", "UPDATE receipt_transactions SET expires_date = now()"),
            ("operator_login", "recording a ledger extension", "INSERT INTO receipt_period_extensions (ledger_id, expires_after, signed_at) VALUES (1, now(), now())"),
            ("api_login", "recording an extension request",
             "SELECT receipt_renewal_extension_request('r', 'mass', 'Production', 'a', NULL, 'p', NULL, 1, 0)"),
            ("worker_login", "inserting an extension request",
             "INSERT INTO receipt_renewal_extensions (request_identifier, scope, environment, bundle_id, product_id, extend_by_days, extend_reason_code, requested_by) VALUES ('r', 'mass', 'Production', 'a', 'p', 1, 0, 'x')"),
        ]
        for (login, what, sql) in refused {
            let connection = try PostgresConnection(Self.url(world, as: login))
            defer { connection.close() }
            let error = #expect(throws: PostgresError.self, "\(login) \(what)") { try connection.query(sql) }
            #expect(error?.sqlState == "42501", "\(login) \(what): \(String(describing: error))")
        }
        // And what they may: the API reads verdicts and the ledger, the operator the views.
        let api = try PostgresConnection(Self.url(world, as: "api_login"))
        defer { api.close() }
        #expect(try api.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows == [["running"]])
        #expect(try api.query("SELECT count(*) FROM receipt_transactions").rows == [["1"]])
        #expect(try api.query("SELECT count(*) FROM receipt_entitlements WHERE user_id = 'u'").rows == [["0"]])
        // The worker offers an answer's other purchases (issue 37): one with a token nobody registered is looked at
        // (receipt_announced_credit(), SECURITY DEFINER, reads the tokens the worker may not) and left alone.
        let worker = try PostgresConnection(Self.url(world, as: "worker_login"))
        defer { worker.close() }
        let seen = try worker.query(
            "SELECT transaction_id, ledger_id FROM receipt_seen_credit(\(id), 'Production', 'com.example.app', 'receipt', "
                + "'[{\"transaction_id\": \"t-seen\", \"product_id\": \"pro.monthly\", \"purchase_date_ms\": 1, "
                + "\"app_account_token\": \"5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c78\"}]')"
        ).rows
        #expect(seen == [["t-seen", nil]])
        let operatorConnection = try PostgresConnection(Self.url(world, as: "operator_login"))
        defer { operatorConnection.close() }
        #expect(try operatorConnection.query("SELECT count(*) FROM receipt_jobs_stuck").rows == [["0"]])
        #expect(try operatorConnection.query("SELECT jobs FROM receipt_queue_summary WHERE state = 'running'").rows == [["1"]])
        // set-account-token --user-id, as an operator: the token registered (SECURITY DEFINER), then claims.
        #expect(
            try operatorConnection.query(
                "SELECT register_account_token('u', '5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c77')"
            ).rows == [["0"]]
        )
        // extend-renewal, as an operator: a request recorded under the operator's login, and Apple's answer.
        try world.query("INSERT INTO receipt_products (product_id, kind) VALUES ('roles.monthly', 'auto_renewable')")
        #expect(
            try operatorConnection.query(
                "SELECT receipt_renewal_extension_request('roles-r1', 'mass', 'Production', $1, NULL, 'roles.monthly', "
                    + "ARRAY['USA'], 3, 3)",
                [ProcessWorld.bundle]
            ).rows == [["roles-r1"]]
        )
        #expect(try operatorConnection.query("SELECT receipt_renewal_extension_result('roles-r1', 'pending')").rows == [["pending"]])
        #expect(
            try operatorConnection.query("SELECT requested_by, state FROM receipt_renewal_extensions").rows
                == [["operator_login", "pending"]]
        )
        // The workers' part, as receipt_worker: a RENEWAL_EXTENDED moves a period's expiry (recorded), a SUMMARY
        // completes the request.
        try world.query(
            """
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              product_id, quantity, bundle_id, user_id, purchase_date, expires_date)
            VALUES ('Production', 'k-2', 't-2', 't-2', 'roles.monthly', 1, 'com.example.app', 'u', now(),
                    now() + interval '1 day')
            """
        )
        let workerConnection = try PostgresConnection(Self.url(world, as: "worker_login"))
        defer { workerConnection.close() }
        let later = String(Int64(Date().timeIntervalSince1970 * 1000) + 5 * 86_400_000)
        #expect(
            try workerConnection.query(
                "SELECT moved FROM receipt_period_extend(NULL, 'Production', now(), "
                    + "jsonb_build_object('transaction_id', 't-2', 'original_transaction_id', 't-2', 'expires_date_ms', $1::text))",
                [later]
            ).rows == [["t"]]
        )
        #expect(
            try workerConnection.query(
                "SELECT receipt_renewal_extension_summary(NULL, 'Production', $1, now(), "
                    + "'{\"type\": \"RENEWAL_EXTENSION\", \"summary\": {\"request_identifier\": \"roles-r1\", "
                    + "\"product_id\": \"roles.monthly\", \"succeeded_count\": 2, \"failed_count\": 0}}')",
                [ProcessWorld.bundle]
            ).rows == [[nil]]
        )
        #expect(try world.query("SELECT state, succeeded_count FROM receipt_renewal_extensions").rows == [["complete", "2"]])
        // explain, as an operator: every section's columns are granted (a missing grant is permission denied, exit 1).
        for subject in [["--order", "forbidden"], ["--user", "u"], ["--transaction", "1"]] {
            let explained = try await Self.run(
                ["explain"] + subject, ChildProcess.environment(setting: ["DATABASE_URL": Self.url(world, as: "operator_login")])
            )
            #expect(explained.status == (subject[0] == "--transaction" ? 3 : 0), "\(subject): \(explained.output)")
            #expect(!explained.output.contains("permission denied"), "\(explained.output)")
        }
    }

    /// A cluster of its own, migrated, with deploy/sql/roles.sql applied by psql as README says, and a login role
    /// in each group role. `beforeRoles` runs on the migrated database before roles.sql.
    static func worldWithRoles(beforeRoles: (ProcessWorld) throws -> Void = { _ in }) throws -> ProcessWorld {
        let world = try ProcessWorld(ownCluster: true)
        try beforeRoles(world)
        let applied = try MigrationTests.psql(
            world.databaseURL, file: TestServer.repositoryRoot.appendingPathComponent("deploy/sql/roles.sql").path
        )
        try #require(applied.status == 0, "psql -f deploy/sql/roles.sql: \(applied.output)")
        for (login, group) in roles {
            try world.query("CREATE ROLE \(quoteIdentifier(login)) LOGIN IN ROLE \(quoteIdentifier(group))")
        }
        return world
    }

    /// The world's database as `login` (the temporary cluster trusts loopback connections).
    static func url(_ world: ProcessWorld, as login: String) -> String {
        world.databaseURL.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://\(login)@")
    }

    /// `receipt-worker enqueue` of `receipt` under `url`; the job id it prints.
    static func enqueue(_ receipt: String, order: String, url: String) async throws -> Int64 {
        let file = NSTemporaryDirectory() + "rw-roles-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: file, contents: Data(receipt.utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (status, output) = try await run(
            ["enqueue", "--receipt-file", file, "--order-id", order, "--user-id", "u-1", "--product-id", "pro.monthly",
             "--bundle-id", ProcessWorld.bundle],
            ChildProcess.environment(setting: ["DATABASE_URL": url])
        )
        #expect(status == 0, "\(output)")
        return try #require(Int64(output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(output)")
    }

    /// Runs a command that exits by itself (within 120 s); its status and output.
    static func run(_ arguments: [String], _ environment: [String: String]) async throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments, environment: environment)
        let status = await child.exit(within: 120)
        return (status, child.output)
    }
}
#endif
