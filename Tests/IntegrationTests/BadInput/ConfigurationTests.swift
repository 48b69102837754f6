#if os(Linux)
import Foundation
import Glibc
import PostgresClient
import Testing

extension BadInput {
    /// `receipt-worker work` and `enqueue` given bad configuration: a refusal at start with the right exit code and a
    /// message naming the problem, or — for a database that is only unreachable — waiting, not crashing.
    @Suite("Bad input: configuration", .ownThread)
    struct ConfigurationTests {
        /// A complete, valid configuration for `work`, pointing at `database`.
        static func environment(database: String, _ changes: [String: String?] = [:]) -> [String: String] {
            var setting: [String: String] = [
                "DATABASE_URL": database,
                "APPLE_SHARED_SECRET": "configuration-test-secret",
                "APPLE_BUNDLE_IDS": "com.example.app",
                "APPLE_PRODUCTION_URL": "http://127.0.0.1:9/verifyReceipt",
                "APPLE_SANDBOX_URL": "http://127.0.0.1:9/sandbox/verifyReceipt",
                "LOG_LEVEL": "info",
            ]
            var removing = ["APPLE_SHARED_SECRET_FILE", "LOG_FORMAT", "METRICS_PORT"]
            for (key, value) in changes {
                if let value { setting[key] = value } else { setting[key] = nil; removing.append(key) }
            }
            return ChildProcess.environment(removing: removing, setting: setting)
        }

        /// Runs a command that must exit by itself within 30 s.
        static func run(_ arguments: [String], _ environment: [String: String]) async throws -> (status: Int32?, output: String) {
            let child = try ChildProcess(arguments, environment: environment)
            let status = await child.exit(within: 30)
            return (status, child.output)
        }

        /// A TCP port on loopback where nothing listens.
        static func closedPort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            try #require(bound == 0)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        /// The last three are values libpq only checks when it connects (it reports them as a failed connection):
        /// `work` must refuse them, not wait for a database it can never reach.
        @Test("malformed DATABASE_URL: exit 2, naming DATABASE_URL", arguments: [
            "postgresql://[bad", "host=127.0.0.1 port", "host='unterminated", "postgresql://u@127.0.0.1/db?nosuchoption=1",
            "postgresql://user@127.0.0.1:notaport/db", "postgresql://user@127.0.0.1:99999/db",
            "postgresql://user@127.0.0.1/db?sslmode=bogus",
        ])
        func malformedDatabaseURL(url: String) async throws {
            let child = try ChildProcess(["work"], environment: Self.environment(database: url))
            let status = await child.exit(within: 10)
            #expect(status == 2, "exit \(String(describing: status)) for \(url): \(child.output.prefix(1500))")
            #expect(child.output.contains("DATABASE_URL"), "\(child.output.prefix(1500))")
        }

        @Test("a DATABASE_URL that is neither a URL nor key=value pairs: exit 2, showing both forms it could take")
        func notAConnectionString() async throws {
            for command in [["work"], ["status"], ["migrate"]] {
                let child = try ChildProcess(command, environment: Self.environment(database: "db.internal/payments"))
                let status = await child.exit(within: 30)
                #expect(status == 2, "\(command): exit \(String(describing: status)): \(child.output)")
                #expect(child.output.contains("missing \"=\""), "\(command): \(child.output)")
                #expect(child.output.contains("postgresql://USER"), "\(command): the URL form is not shown: \(child.output)")
                #expect(child.output.contains("host=HOST"), "\(command): the key=value form is not shown: \(child.output)")
            }
        }

        @Test("unreachable database (a closed port): work keeps running and says it waits; SIGTERM stops it with exit 0")
        func unreachableDatabase() async throws {
            let port = try Self.closedPort()
            let child = try ChildProcess(["work"], environment: Self.environment(database: "postgresql://postgres@127.0.0.1:\(port)/none"))
            let line = await child.line(containing: "waiting for it", within: 20)
            #expect(line != nil, "no line saying it waits for the database: \(child.output)")
            await Wait.seconds(2)
            #expect(child.isRunning, "work exited while the database was unreachable: \(child.output)")
            #expect(child.lines(containing: "worker started").isEmpty, "started without a database: \(child.output)")
            #expect(child.output.contains("cannot connect to PostgreSQL"), "\(child.output.prefix(2000))")
            #expect(!child.output.contains("PostgresError"), "a type name in the logs: \(child.output.prefix(2000))")
            child.signal(SIGTERM)
            let status = await child.exit(within: 60)
            #expect(status == 0, "exit \(String(describing: status)) after SIGTERM: \(child.output.suffix(2000))")
        }

        @Test("missing or empty shared secret, from the variable or the file: exit 2, naming what to set", arguments: [
            "unset", "empty", "missing file", "empty file",
        ])
        func missingSecret(variant: String) async throws {
            let empty = NSTemporaryDirectory() + "rw-empty-secret-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: empty, contents: Data("\n  \n".utf8))
            defer { try? FileManager.default.removeItem(atPath: empty) }
            let changes: [String: String?] = switch variant {
            case "unset": ["APPLE_SHARED_SECRET": nil]
            case "empty": ["APPLE_SHARED_SECRET": ""]
            case "missing file": ["APPLE_SHARED_SECRET": nil, "APPLE_SHARED_SECRET_FILE": "/nonexistent/secret"]
            default: ["APPLE_SHARED_SECRET": nil, "APPLE_SHARED_SECRET_FILE": empty]
            }
            let (status, output) = try await Self.run(["work"], Self.environment(database: "postgresql://nobody@127.0.0.1:1/x", changes))
            #expect(status == 2, "\(variant): exit \(String(describing: status)): \(output)")
            #expect(output.contains("APPLE_SHARED_SECRET"), "\(variant): \(output)")
            if variant.hasSuffix("file") { #expect(output.contains(variant == "missing file" ? "/nonexistent/secret" : empty)) }
        }

        @Test("a non-loopback plain-http (or non-https) Apple URL is refused at start with exit 2", arguments: [
            "http://example.com/verifyReceipt", "HTTP://example.com/verifyReceipt", "http://127.0.0.1.example.com/verifyReceipt",
            "http://127.0.0.1@example.com/verifyReceipt", "http://example.com?@127.0.0.1/", "http://example.com#@127.0.0.1/",
            "http://localhost.example.com/verifyReceipt", "http://[::1]:80@example.com/", "ftp://buy.itunes.apple.com/verifyReceipt",
            "file:///etc/passwd", "buy.itunes.apple.com/verifyReceipt",
        ])
        func plainHTTPRefused(url: String) async throws {
            for variable in ["APPLE_PRODUCTION_URL", "APPLE_SANDBOX_URL"] {
                let (status, output) = try await Self.run(
                    ["work"], Self.environment(database: "postgresql://nobody@127.0.0.1:1/x", [variable: url])
                )
                #expect(status == 2, "\(variable)=\(url): exit \(String(describing: status)): \(output)")
                #expect(output.contains(variable), "\(variable)=\(url): \(output)")
            }
        }

        @Test("enqueue for an unknown bundle id is refused with a message naming it, in SQL and on the command line")
        func unknownBundleId() async throws {
            let h = try Harness()
            let receipt = Harness.receipt(purchases: [Harness.purchase("b-1")])
            let error = #expect(throws: PostgresError.self) { try h.enqueue(receipt, order: "b-1", bundle: "com.unknown.app") }
            #expect(error?.message.contains("\"com.unknown.app\"") == true, "\(String(describing: error))")
            #expect(error?.sqlState == "22023")
            #expect(error?.hint?.contains("APPLE_BUNDLE_IDS") == true)

            let file = NSTemporaryDirectory() + "rw-receipt-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: file, contents: Data(receipt.utf8))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (status, output) = try await Self.run(
                ["enqueue", "--receipt-file", file, "--order-id", "b-2", "--user-id", "u", "--product-id", "p",
                 "--bundle-id", "com.unknown.app"],
                ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL])
            )
            #expect(status != nil && status != 0, "\(output)")
            #expect(output.contains("com.unknown.app"), "\(output)")
            #expect(output.contains("APPLE_BUNDLE_IDS"), "the fix is not named: \(output)")
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")

            // Without a bundle id while two apps are configured: refused, saying why.
            let missing = #expect(throws: PostgresError.self) {
                try h.store.enqueue(receiptData: receipt, orderId: "b-3", userId: "u", productId: "p", bundleId: nil)
            }
            #expect(missing?.message.contains("bundle_id is required") == true, "\(String(describing: missing))")
        }
    }
}
#endif
