import Foundation
import Testing

/// `work` under a lowered hard RLIMIT_NOFILE (prlimit in the child): the open-files check counts a socket per call
/// only where calls cannot share connections.
@Suite("work's open-files check under a 20,000-file limit")
struct OpenFileLimitCommandTests {
    /// `receipt-worker work` with MAX_IN_FLIGHT 30,000 and `version`, its hard and soft file limit 20,000, its
    /// database unreachable (port 1).
    private func start(httpVersion: String) throws -> ChildProcess {
        let environment = ChildProcess.environment(
            removing: ["APPLE_PRODUCTION_URL", "APPLE_SANDBOX_URL", "APPLE_MAX_CONNECTIONS", "APPSTORE_CA_FILE"],
            setting: [
                "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
                "APPLE_BUNDLE_IDS": "com.example.app", "MAX_IN_FLIGHT": "30000", "APPLE_HTTP_VERSION": httpVersion,
            ]
        )
        return try ChildProcess(
            ["--nofile=20000:20000", try ChildProcess.executable(), "work"], executable: "/usr/bin/prlimit",
            environment: environment
        )
    }

    @Test("over HTTP/2, 30,000 calls in flight are accepted: they share at most 144 connections")
    func http2Accepted() throws {
        let child = try start(httpVersion: "2")
        // Past the check, the worker waits for its database: it says so, and is stopped here.
        let line = child.waitForLine(containing: "cannot connect to PostgreSQL", timeout: 30)
        #expect(line != nil, "\(child.output)")
        #expect(!child.output.contains("open files"), "\(child.output)")
    }

    @Test("over HTTP/1.1, 30,000 calls in flight are refused: a socket each, the message says how to fix it")
    func http1Refused() throws {
        let child = try start(httpVersion: "1.1")
        let status = child.wait(timeout: 30)
        let output = child.output
        #expect(status == 2, "\(output)")
        #expect(output.contains("MAX_IN_FLIGHT 30000 needs about 30064 open files"), "\(output)")
        #expect(output.contains("a socket per call in flight: HTTP/1.1"), "\(output)")
        #expect(output.contains("may open 20000"), "\(output)")
        #expect(output.contains("LimitNOFILE") && output.contains("APPLE_HTTP_VERSION=2"), "\(output)")
    }
}
