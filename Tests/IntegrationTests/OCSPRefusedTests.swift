#if os(Linux)
import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// "OCSP unreachable" for real: the chain's responders are a loopback port that refuses connections (bound on port 0,
/// noted, closed), asked through the production OCSP client over libcurl (`OCSPClient.curl`), not a closure that
/// throws. A genuine notification is then retryable (`revocationUnavailable`): retried later, never rejected.
@Suite("OCSP responder refusing connections, over libcurl", .serialized, .ownThread)
struct OCSPRefusedTests {
    @Test("responders on a port that refuses: verify says revocationUnavailable (retryable); the worker retries, never rejects")
    func refusedPort() throws {
        let port = try freePort()
        let (signer, genuine) = try HostileSignedDataTests.notification(respondersAt: "http://127.0.0.1:\(port)")
        let h = try Harness()
        func verifier() -> SignedDataVerifier {
            SignedDataVerifier(
                configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: true),
                ocsp: .curl(h.transport)
            )
        }
        // The verifier itself: the connection refused is no verdict on the certificate.
        let error = #expect(throws: SignedDataError.self) { try verifier().verify(genuine) }
        #expect(error?.code == .revocationUnavailable, "\(String(describing: error))")
        #expect(error?.isRetryable == true)

        // End to end: the notification waits for another attempt, one attempt spent, no verdict.
        let id = try NotificationTests.receive(h, genuine)
        let threads = try h.startWorkers(1, signedData: verifier()) { $0.drain = false }
        defer { for thread in threads { _ = thread.stop(waitingUpTo: 10) } }
        let settled = try h.waitUntil(60) {
            try !["queued", "running"].contains(NotificationTests.state(h, id) ?? "queued")
        }
        #expect(settled)
        let state = try NotificationTests.state(h, id)
        #expect(state?.hasPrefix("retry") == true, "\(state ?? "nil")")
        #expect(try h.scalar("SELECT attempts FROM receipt_notifications WHERE id = $1", [String(id)]) == "1")
        let lastError = try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(id)])
        #expect(lastError?.isEmpty == false, "the retry keeps why: \(lastError ?? "nil")")
    }
}
#endif
