#if os(Linux)
import Foundation
import Glibc
import Testing

extension BadInput {
    /// `receipt-worker enqueue --receipt-file`: the one way bytes that are not UTF-8 (or hold NUL) can reach
    /// enqueue_receipt(), since Swift strings are always valid Unicode.
    @Suite("Bad input: receipt files given to receipt-worker enqueue", .ownThread)
    struct EnqueueCommandTests {
        /// Runs `enqueue` with `bytes` as the receipt file; returns the exit status, the output and the job id printed.
        static func enqueue(
            _ h: Harness, bytes: [UInt8], order: String, user: String = "user-1", product: String = "pro.monthly"
        ) async throws -> (status: Int32?, output: String, id: Int64?) {
            let (status, output, errors, id) = try await enqueueSeparately(h, bytes: bytes, order: order, user: user, product: product)
            return (status, output + errors, id)
        }

        /// Like `enqueue`, with standard output (the job id) and standard error (what went wrong) apart.
        static func enqueueSeparately(
            _ h: Harness, bytes: [UInt8], order: String, user: String = "user-1", product: String = "pro.monthly"
        ) async throws -> (status: Int32?, output: String, errors: String, id: Int64?) {
            let file = NSTemporaryDirectory() + "rw-receipt-\(UUID().uuidString)"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let child = try ChildProcess(
                ["enqueue", "--receipt-file", file, "--order-id", order, "--user-id", user, "--product-id", product,
                 "--bundle-id", "com.example.app"],
                environment: ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL]), separateErrors: true
            )
            let status = await child.exit(within: 30)
            let output = child.output
            let id = output.split(separator: "\n").lazy.compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
                .first
            return (status, output, child.errors, id)
        }

        @Test("non-UTF-8 bytes in the receipt file: the job is rejected malformed_input, never sent to Apple")
        func nonUTF8() async throws {
            let h = try Harness()
            let valid = Array(Harness.receipt(purchases: [Harness.purchase("utf-1")]).utf8)
            let cases: [(String, [UInt8])] = [
                ("Latin-1 é inside base64", Array("QUFB".utf8) + [0xE9] + Array("QUFB".utf8)),
                ("only invalid bytes", [0xFF, 0xFE, 0xFD, 0xC0]),
                ("a valid receipt with a stray 0xFF at the end", valid + [0xFF]),
                ("a truncated UTF-8 sequence", Array("QUFB".utf8) + [0xE2, 0x82]),
                ("a UTF-8 byte-order mark before a valid receipt", [0xEF, 0xBB, 0xBF] + valid),
            ]
            var ids: [(String, Int64)] = []
            for (index, (name, bytes)) in cases.enumerated() {
                let (status, output, errors, id) = try await Self.enqueueSeparately(h, bytes: bytes, order: "bytes-\(index)")
                #expect(status == 4, "\(name): \(output) \(errors)")
                let job = try #require(id, "\(name): no job id printed: \(output)")
                ids.append((name, job))
                // The id on standard output (for scripts), the immediate rejection on standard error.
                #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == String(job), "\(name): \(output)")
                #expect(
                    errors.contains("job \(job) was rejected at once: malformed_input (receipt_data is not base64)"),
                    "\(name): \(errors)"
                )
            }
            try await h.drainWithoutBlocking()
            for (name, id) in ids {
                let job = try h.job(id)
                #expect(job["state"] == "rejected", "\(name): \(job)")
                #expect(job["reason"] == "malformed_input", "\(name): \(job)")
                #expect(job["last_error"] == "receipt_data is not base64", "\(name): \(job)")
                #expect(job["attempts"] == "0", "\(name)")
            }
            #expect(h.fake.stats().total == 0, "a receipt that is not base64 reached Apple")
            try Invariants.check(h.db, enqueued: cases.count)
        }

        @Test("a receipt file with a trailing newline (echo > file) is a good receipt: verified")
        func trailingNewline() async throws {
            let h = try Harness()
            let receipt = Harness.receipt(purchases: [Harness.purchase("nl-1")])
            let (status, output, id) = try await Self.enqueue(h, bytes: Array((receipt + "\n").utf8), order: "newline")
            #expect(status == 0, "\(output)")
            let job = try #require(id)
            try await h.drainWithoutBlocking()
            #expect(try h.job(job)["state"] == "verified")
            try Invariants.check(h.db, enqueued: 1)
        }

        @Test("a NUL byte in the receipt file (a raw receipt, UTF-16): bad input, exit 2 saying base64 is expected, no job")
        func nulByte() async throws {
            let h = try Harness()
            let text = Harness.receipt(purchases: [Harness.purchase("u16")])
            let utf16: [UInt8] = [0xFF, 0xFE] + text.utf8.flatMap { (byte: UInt8) -> [UInt8] in [byte, 0] }
            for bytes in [Array("QUFB".utf8) + [0] + Array("QUFB".utf8), utf16] {
                let (status, output, _) = try await Self.enqueue(h, bytes: bytes, order: "nul")
                #expect(status == 2, "\(output)")
                #expect(output.contains("holds binary data (a NUL byte)"), "\(output)")
                #expect(output.contains("expected base64 text (the app receipt encoded with `base64 -w0`)"), "\(output)")
            }
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")
        }

        @Test("an empty receipt file: the job is rejected malformed_input (a verdict: its id printed, exit 4)")
        func emptyFile() async throws {
            let h = try Harness()
            let (status, output, id) = try await Self.enqueue(h, bytes: [], order: "empty-file")
            #expect(status == 4, "\(output)")
            let job = try h.job(try #require(id))
            #expect(job["state"] == "rejected")
            #expect(job["reason"] == "malformed_input")
            #expect(job["last_error"] == "receipt_data is empty")
            #expect(
                output.contains("job \(try #require(id)) was rejected at once: malformed_input (receipt_data is empty)"),
                "\(output)"
            )
        }

        @Test("a receipt file that does not exist: bad input, exit 2 naming the file and why, and no job")
        func missingFile() async throws {
            let h = try Harness()
            let child = try ChildProcess(
                ["enqueue", "--receipt-file", "/nonexistent/receipt.b64", "--order-id", "gone", "--user-id", "u",
                 "--product-id", "pro.monthly", "--bundle-id", "com.example.app"],
                environment: ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL])
            )
            #expect(await child.exit(within: 30) == 2)
            #expect(
                child.output.contains("cannot read the receipt file /nonexistent/receipt.b64: there is no such file"),
                "\(child.output)"
            )
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")
        }

        /// Runs `script` in bash with RW (the binary), FILE (holding `bytes`) and ARGS (enqueue's other arguments)
        /// set; the exit status and output (stdout and stderr together).
        static func shell(_ h: Harness, bytes: [UInt8], order: String, _ script: String) throws -> (Int32?, String) {
            let file = NSTemporaryDirectory() + "rw-receipt-\(UUID().uuidString)"
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let arguments = "--order-id \(order) --user-id u --product-id pro.monthly --bundle-id com.example.app"
            let child = try ChildProcess(
                ["-c", "exec \"$RW\" enqueue " + script],
                executable: "/bin/bash",
                environment: ChildProcess.environment(setting: [
                    "DATABASE_URL": h.databaseURL, "RW": try ChildProcess.executable(), "FILE": file,
                    "ARGS": arguments,
                ])
            )
            let status = child.wait(timeout: 30)
            return (status, child.output)
        }

        @Test("a receipt from a pipe, /dev/stdin, process substitution or - is read and verified")
        func pipes() async throws {
            let h = try Harness()
            let forms = [
                ("-", "--receipt-file - $ARGS < <(cat \"$FILE\")"),
                ("/dev/stdin", "--receipt-file /dev/stdin $ARGS < <(cat \"$FILE\")"),
                ("<(…)", "--receipt-file <(cat \"$FILE\") $ARGS"),
            ]
            var ids: [Int64] = []
            for (index, (name, script)) in forms.enumerated() {
                let receipt = Harness.receipt(purchases: [Harness.purchase("pipe-\(index)")])
                let (status, output) = try Self.shell(h, bytes: Array(receipt.utf8), order: "pipe-\(index)", script)
                #expect(status == 0, "\(name): \(output)")
                #expect(!output.contains("not readable"), "\(name): \(output)")
                ids.append(try #require(Int64(output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(name): \(output)"))
            }
            try await h.drainWithoutBlocking()
            for id in ids { #expect(try h.job(id)["state"] == "verified") }
        }

        @Test("/dev/null is an empty receipt (rejected at once, exit 4); --no-fail-on-rejected exits 0 as before")
        func devNullAndNoFail() async throws {
            let h = try Harness()
            let (status, output) = try Self.shell(h, bytes: [], order: "null-1", "--receipt-file /dev/null $ARGS")
            #expect(status == 4, "\(output)")
            #expect(output.contains("was rejected at once: malformed_input (receipt_data is empty)"), "\(output)")
            #expect(output.contains("expected base64"), "\(output)")
            let kept = try Self.shell(h, bytes: [], order: "null-2", "--receipt-file /dev/null $ARGS --no-fail-on-rejected")
            #expect(kept.0 == 0, "\(kept.1)")
            #expect(kept.1.contains("was rejected at once"), "\(kept.1)")
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'rejected'") == "2")
        }

        @Test("a raw receipt (the DER bytes, not base64): bad input, exit 2 saying base64 is expected, no job")
        func rawReceipt() async throws {
            let h = try Harness()
            // The first bytes of an App Store receipt (PKCS #7 in DER): its algorithm identifiers hold NULs.
            let raw = try #require(Data(base64Encoded: "MIAGCSqGSIb3DQEHAqCAMIACAQExCzAJBgUrDgMCGgUAMIAGCSqGSIb3DQEHAaCAJIAE"))
            let (status, output, _) = try await Self.enqueue(h, bytes: Array(raw), order: "raw")
            #expect(status == 2, "\(output)")
            #expect(output.contains("expected base64 text"), "\(output)")
            #expect(!output.contains("parameter $1"), "\(output)")
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")
        }

        @Test("a signed transaction file goes through enqueue_transaction and is verified by the workers")
        func signedTransactionFile() async throws {
            let h = try Harness()
            let jws = try SignedTransactionTests.sign(.init(transactionId: "2000000000000900"))
            let file = NSTemporaryDirectory() + "rw-jws-\(UUID().uuidString)"
            try Data(jws.utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let child = try ChildProcess(
                ["enqueue", "--signed-transaction-file", file, "--order-id", "sk2", "--user-id", "u",
                 "--product-id", "pro.monthly", "--bundle-id", "com.example.app",
                 "--app-account-token", "0b7b2f5e-62f4-4c8e-9d3c-5e1c2a7d9f10"],
                environment: ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL])
            )
            #expect(await child.exit(within: 30) == 0, "\(child.output)")
            let id = try #require(Int64(child.output.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(try h.scalar("SELECT kind FROM receipt_jobs WHERE id = $1", [String(id)]) == "signed_transaction")
            try await h.drainWithoutBlocking()
            #expect(try h.job(id)["state"] == "verified")
        }
    }
}
#endif
