#if os(Linux)
import Foundation
import Testing

/// What `receipt-worker` prints for an operator's terminal, run as the built binary: text from the database (a job's
/// last error, which quotes Apple or an input) and logged values holding an escape sequence (ESC [), the C1 CSI
/// (U+009B, ESC [ to a terminal), DEL, U+2028 and the bidirectional override U+202E and isolate U+2066 ("Trojan
/// Source": they reorder what is read) are shown as `\u{…}`, never sent raw.
@Suite("Terminal output: status tables and the text log escape control and bidirectional characters", .ownThread)
struct TerminalEscapingTests {
    /// Characters that must never reach the terminal raw.
    static func isRaw(_ scalar: Unicode.Scalar) -> Bool {
        [0x1B, 0x9B, 0x7F, 0x85, 0x2028, 0x2029, 0x202E, 0x2066].contains(scalar.value)
    }

    /// A last error as hostile text could make it (69 characters: `status` shows the first 70).
    static let hostileError = "apple: \u{1B}[31mred\u{1B}[0m \u{9B}2J \u{202E}lanigiro\u{2066}x\u{7F}\u{2028}end"

    @Test("`status`: a failed job's latest error and reason holding ESC [, U+009B, U+202E are printed escaped")
    func statusEscapesLatestError() async throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("tty-1")]), order: "tty-1")
        _ = try h.db.query(
            "UPDATE receipt_jobs SET state = 'dead', reason = $2, last_error = $3, updated_at = now() WHERE id = $1",
            [String(id), "bad\u{9B}31m\u{202E}reason", Self.hostileError]
        )
        #expect(try h.scalar("SELECT latest_error FROM receipt_failures WHERE state = 'dead'") == Self.hostileError)

        let result = try await ReconcileCommandTests.run(
            ["status"], ChildProcess.environment(setting: ["DATABASE_URL": h.databaseURL])
        )
        #expect(result.status == 0, "\(result.output.debugDescription)")
        #expect(result.output.contains("Failures, last 24 hours"), "\(result.output.debugDescription)")
        #expect(!result.output.unicodeScalars.contains(where: Self.isRaw), "\(result.output.debugDescription)")
        #expect(result.output.contains(
            #"apple: \u{1b}[31mred\u{1b}[0m \u{9b}2J \u{202e}lanigiro\u{2066}x\u{7f}\u{2028}end"#
        ), "\(result.output.debugDescription)")
        #expect(result.output.contains(#"bad\u{9b}31m\u{202e}reason"#), "\(result.output.debugDescription)")
    }

    @Test("LOG_FORMAT=text: a logged value (a DATABASE_URL socket directory quoted by libpq) is escaped the same way")
    func textLogEscapes() async throws {
        let directory = "/tmp/rw-\(UUID().uuidString.prefix(8))\u{1B}[2J\u{9B}31m\u{202E}\u{2066}\u{7F}\u{2028}x"
        let worker = try await Self.workLogging(socketDirectory: directory, format: "text")
        let logged = try #require(worker.line, "\(worker.output.debugDescription)")
        #expect(!worker.output.unicodeScalars.contains(where: Self.isRaw), "\(worker.output.debugDescription)")
        // U+2028 is a line break: folded into "; " like libpq's own line breaks (LogText.oneLine).
        #expect(logged.contains(#"\u{1b}[2J\u{9b}31m\u{202e}\u{2066}\u{7f}; x/"#), "\(logged.debugDescription)")
    }

    /// Runs `work` with DATABASE_URL naming `socketDirectory`, which does not exist: libpq's "No such file or
    /// directory" quotes it, and the worker logs "database unavailable, retrying" with that error while it waits (no
    /// database needed). That log line (nil if none came within 30 s) and all the worker wrote.
    static func workLogging(socketDirectory: String, format: String) async throws -> (line: String?, output: String) {
        let environment = ChildProcess.environment(
            removing: ["APPLE_SHARED_SECRET_FILE", "METRICS_PORT"],
            setting: [
                "DATABASE_URL": "host='\(socketDirectory)' dbname=x user=x", "APPLE_SHARED_SECRET": "secret",
                "APPLE_BUNDLE_IDS": "com.example.app", "LOG_FORMAT": format, "LOG_LEVEL": "info",
            ]
        )
        let worker = try ChildProcess(["work"], environment: environment)
        let line = await worker.line(containing: "database unavailable, retrying", within: 30)
        if await worker.holdsTerminationSignals(within: 10) { worker.signal(SIGTERM) }
        _ = await worker.exit(within: 15)
        return (line, worker.output)
    }
}

#endif
