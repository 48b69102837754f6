#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import Testing

extension BadInput {
    /// The shared secret and whole receipts never reach logs or tables; logs carry job ids and short receipt
    /// hashes instead; JSON logs stay one valid object per line whatever the ids hold.
    @Suite("Bad input: secrets and receipts stay out of logs", .serialized, .ownThread)
    struct SecretLeakTests {
        @Test("a full debug run in JSON with 21004, faults, a dead job and rejections: no secret, no receipt, ids and hashes present")
        func debugLogsHoldNoSecret() async throws {
            let secret = "rw-secret-\(UUID().uuidString)"
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(sharedSecret: secret, hangSeconds: 5))
            let subscription = Harness.purchase("leak-sub", expiresInMs: 86_400_000)
            let receipts: [(String, String, String?, String)] = [
                ("plain", Harness.receipt(purchases: [Harness.purchase("leak-1")]), nil, "verified"),
                ("sandbox hop", Harness.receipt(environment: "Sandbox", purchases: [Harness.purchase("leak-2")]), nil, "verified"),
                ("21004 twice", Harness.receipt(purchases: [Harness.purchase("leak-3")], faults: [.status21004, .status21004]), nil, "verified"),
                ("faults on a subscription", Harness.receipt(purchases: [subscription], faults: [.html503, .reset, .truncated, .hang]), nil, "verified"),
                ("21002 garbage", Data((0..<200).map { UInt8($0) }).base64EncodedString(), nil, "rejected"),
                ("product mismatch", Harness.receipt(purchases: [Harness.purchase("leak-5", product: "coins")]), "leak-5", "rejected"),
                ("never answered", Harness.receipt(purchases: [Harness.purchase("leak-6")], faults: Array(repeating: .status21009, count: 10)), nil, "dead"),
            ]
            var ids: [(String, Int64, String, String)] = []
            for (index, (name, receipt, transaction, state)) in receipts.enumerated() {
                ids.append((name, try world.enqueue(receipt, order: "leak-\(index)", transaction: transaction), receipt, state))
            }
            // A malformed row inserted directly: judged by the worker itself.
            let direct = try world.int(
                """
                INSERT INTO receipt_jobs (bundle_id, order_id, user_id, product_id, receipt_data)
                VALUES ('com.example.app', 'leak-direct', 'u', 'p', '%%%%') RETURNING id
                """
            )
            world.remember(Int64(direct))

            // A 2 s timeout (the hang, 5 s, outlasts it) and 8 attempts: the subscription's five calls leave three
            // spare for answers slowed by a loaded machine (with 1 s and 6, one); "never answered" still ends dead
            // (each attempt more costs it about 3 s).
            let worker = try world.startWorker(
                ["LOG_LEVEL": "debug", "LOG_FORMAT": "json", "APPLE_SHARED_SECRET": secret, "APPLE_TIMEOUT_SECONDS": "2",
                 "MAX_ATTEMPTS": "8"],
                arguments: ["work", "--drain"]
            )
            let status = await worker.exit(within: 90)
            let output = worker.output
            #expect(status == 0, "work --drain: \(String(describing: status))\n\(output.suffix(3000))")
            for (name, id, _, state) in ids {
                #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows.first?.first == state, "\(name)")
            }

            // The secret: not in the logs, not in any table.
            #expect(!output.contains(secret), "the shared secret is in the logs")
            for table in ["receipt_jobs", "receipt_transactions", "receipt_purchase_owners", "receipt_admin_log"] {
                #expect(try world.int("SELECT count(*) FROM \(table) r WHERE position($1 IN r::text) > 0", [secret]) == 0,
                        "the shared secret is in \(table)")
            }
            // No receipt, nor a long piece of one.
            for (name, _, receipt, _) in ids {
                let compact = receipt.filter { !$0.isWhitespace }
                #expect(!output.contains(compact), "\(name): the whole receipt is in the logs")
                for start in stride(from: 0, to: max(compact.count - 48, 1), by: max((compact.count - 48) / 4, 1)) {
                    let piece = String(compact.dropFirst(start).prefix(48))
                    #expect(!output.contains(piece), "\(name): part of the receipt is in the logs: \(piece)")
                }
            }
            // What the logs do carry: the job id, and a short hash for every job that reached Apple.
            for (name, id, _, _) in ids {
                #expect(output.contains("\"job_id\":\"\(id)\""), "\(name): job \(id) is not in the logs")
                let hash = try #require(try world.query("SELECT receipt_hash FROM receipt_jobs WHERE id = $1", [String(id)])
                    .rows.first?.first ?? nil)
                #expect(output.contains("\"receipt\":\"\(hash.prefix(12))\""), "\(name): no short receipt hash")
            }
            #expect(output.contains("\"job_id\":\"\(direct)\""))
            #expect(output.contains("21004") && output.contains("APPLE_SHARED_SECRET"), "the configuration error was not raised loudly")
            // One JSON object per line.
            for line in output.split(separator: "\n") {
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object != nil, "not a JSON line: \(line.prefix(200))")
            }
            _ = try world.invariants()
        }

        @Test("order ids with line breaks cannot forge log lines (JSON and text)", arguments: ["json", "text"])
        func logInjection(format: String) async throws {
            let world = try ProcessWorld()
            let forged = "forged-\(UUID().uuidString.prefix(8))"
            let order = "o-1\n{\"level\":\"critical\",\"message\":\"\(forged)\"}\n2026-01-01T00:00:00+0000 critical receipt-worker: \(forged)"
            let id = try world.enqueue(Harness.receipt(purchases: [Harness.purchase("inj-1")]), order: order)
            let worker = try world.startWorker(["LOG_FORMAT": format, "LOG_LEVEL": "info"], arguments: ["work", "--drain"])
            #expect(await worker.exit(within: 60) == 0)
            #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows.first?.first == "verified")
            let output = worker.output
            let forgedLines = output.split(separator: "\n").filter {
                $0.hasPrefix("{\"level\":\"critical\",\"message\":\"\(forged)") || $0.hasPrefix("2026-01-01T00:00:00+0000 critical")
            }
            #expect(forgedLines.isEmpty, "forged log lines: \(forgedLines)")
            #expect(output.contains(forged), "the order id is not in the logs at all")
        }

        @Test("the shared secret from APPLE_SHARED_SECRET_FILE with a trailing newline is the secret (no 21004 loop)")
        func secretFile() async throws {
            let secret = "rw-file-secret-\(UUID().uuidString)"
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(sharedSecret: secret))
            let file = NSTemporaryDirectory() + "rw-secret-\(UUID().uuidString)"
            try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let id = try world.enqueue(
                Harness.receipt(purchases: [Harness.purchase("file-1", expiresInMs: 86_400_000)]), order: "file-secret"
            )
            var environment = world.environment(["APPLE_SHARED_SECRET_FILE": file])
            environment["APPLE_SHARED_SECRET"] = nil
            let worker = try ChildProcess(["work", "--drain"], environment: environment)
            #expect(await worker.exit(within: 60) == 0, "\(worker.output.suffix(2000))")
            #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows.first?.first == "verified")
            #expect(try world.fakeServer.stats().count("production", "21004") == 0)
            #expect(!worker.output.contains(secret))
        }
    }
}
#endif
