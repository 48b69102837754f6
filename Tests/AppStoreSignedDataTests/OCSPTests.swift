#if os(Linux)
import AppStoreClient
@testable import AppStoreSignedData
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import Glibc
import LoopbackHTTP
import Synchronization
import Testing
import X509

/// Online checks against real OCSP responders on loopback: `openssl ocsp`, one for the leaf (answers signed by the
/// intermediate) and one for the intermediate (signed by the root), with revocations in their index files. The
/// requests go over libcurl, as in production.
@Suite("OCSP against local responders", .serialized)
struct OCSPTests {
    /// An `openssl ocsp` responder for the certificates `ca` issued.
    final class Responder {
        let port: Int
        let process = Process()
        let directory: String

        init(port: Int, ca: Certificate, key: P256.Signing.PrivateKey, issued: [(Certificate, revokedAt: Date?)]) throws {
            self.port = port
            directory = NSTemporaryDirectory() + "rw-ocsp-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try ca.serializeAsPEM().pemString.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            try key.pemRepresentation.write(toFile: directory + "/ca.key", atomically: true, encoding: .utf8)
            let index = issued.map { certificate, revokedAt in
                let serial = certificate.serialNumber.bytes.map { String(format: "%02X", $0) }.joined()
                let expiry = Self.indexDate(certificate.notValidAfter)
                let status = revokedAt.map { "R\t\(expiry)\t\(Self.indexDate($0))" } ?? "V\t\(expiry)\t"
                return "\(status)\t\(serial)\tunknown\t/CN=\(certificate.serialNumber)\n"
            }.joined()
            try index.write(toFile: directory + "/index.txt", atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "ocsp", "-index", directory + "/index.txt", "-port", String(port), "-rsigner", directory + "/ca.pem",
                "-rkey", directory + "/ca.key", "-CA", directory + "/ca.pem", "-ndays", "1",
            ]
            // Ready once it says so. (Probing the port instead would leave openssl reading the probe's closed
            // connection in a loop.)
            let output = Pipe()
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = output
            let ready = DispatchSemaphore(value: 0)
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty || String(decoding: data, as: UTF8.self).contains("ACCEPT") {
                    handle.readabilityHandler = nil
                    ready.signal()
                }
            }
            try process.run()
            guard ready.wait(timeout: .now() + 30) == .success else {
                throw ResponderError(reason: "openssl ocsp did not start listening on port \(port) within 30 s")
            }
        }

        var url: String { "http://127.0.0.1:\(port)/ocsp" }

        /// SIGKILL: the child inherits this process's blocked signals, SIGTERM among them.
        func stop() {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(atPath: directory)
        }

        deinit { stop() }

        /// YYMMDDHHMMSSZ, as openssl's index file wants dates.
        static func indexDate(_ date: Date) -> String {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyMMddHHmmss'Z'"
            return formatter.string(from: date)
        }

        static func freePort() throws -> Int {
            let listener = try LoopbackListener()
            listener.stop()
            return listener.port
        }

    }

    struct ResponderError: Error { var reason: String }

    /// A chain whose leaf and intermediate name the two responders, and the responders (which need the chain's
    /// certificates, so the ports are taken first and the chain made for them).
    struct World {
        var chain: SigningChain
        var leafResponder: Responder
        var intermediateResponder: Responder?
        var transport: CurlMultiTransport

        /// `revokeLeaf`/`revokeIntermediate`: revoked an hour ago; `leafUnknown`: the leaf's responder does not
        /// know the leaf (status unknown); `intermediateResponder: false`: nothing listens on its port.
        init(
            revokeLeaf: Bool = false, revokeIntermediate: Bool = false, leafUnknown: Bool = false,
            intermediateResponder startIntermediate: Bool = true
        ) throws {
            let leafPort = try Responder.freePort()
            var intermediatePort = try Responder.freePort()
            while intermediatePort == leafPort { intermediatePort = try Responder.freePort() }
            var options = SigningChain.Options()
            options.leafOCSPURL = "http://127.0.0.1:\(leafPort)/ocsp"
            options.intermediateOCSPURL = "http://127.0.0.1:\(intermediatePort)/ocsp"
            chain = try SigningChain(options)
            leafResponder = try Responder(
                port: leafPort, ca: chain.intermediate, key: chain.intermediateKey,
                issued: leafUnknown ? [] : [(chain.leaf, revokeLeaf ? Date(timeIntervalSinceNow: -3600) : nil)]
            )
            intermediateResponder = startIntermediate
                ? try Responder(
                    port: intermediatePort, ca: chain.root, key: chain.rootKey,
                    issued: [(chain.intermediate, revokeIntermediate ? Date(timeIntervalSinceNow: -3600) : nil)]
                ) : nil
            CurlGlobal.initialize()
            transport = try CurlMultiTransport()
        }

        var verifier: SignedDataVerifier {
            SignedDataVerifier(
                configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: .curl(transport)
            )
        }

        /// A verifier whose OCSP requests go over libcurl through `wrap` (to count them, or hold them up).
        func verifier(
            cacheSeconds: Double = 15 * 60,
            _ wrap: @escaping @Sendable (OCSPClient, [UInt8], String) async throws -> [UInt8]
        ) -> SignedDataVerifier {
            let curl = OCSPClient.curl(transport)
            return SignedDataVerifier(
                configuration: .init(rootCertificates: [chain.root], onlineChecks: true, onlineCacheSeconds: cacheSeconds),
                ocsp: OCSPClient { request, uri in try await wrap(curl, request, uri) }
            )
        }

        func jws() throws -> String {
            try JWSSigner(chain: chain).sign(
                Data(#"{"transactionId":"1","signedDate":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#.utf8)
            )
        }
    }

    @Test("good answers from both responders: verified online; the checked chain then stands without them")
    func good() throws {
        let world = try World()
        defer { world.transport.shutdown() }
        let verifier = world.verifier
        #expect(try verifier.verify(try world.jws()).payload.isEmpty == false)
        world.leafResponder.stop()
        world.intermediateResponder?.stop()
        #expect(try verifier.verify(try world.jws()).payload.isEmpty == false, "the chain is cached for 15 minutes")
        // A new verifier has no cache: with the responders gone, no verdict (retryable), not a rejection.
        let error = #expect(throws: SignedDataError.self) { try world.verifier.verify(try world.jws()) }
        #expect(error?.code == .revocationUnavailable)
        #expect(error?.isRetryable == true)
    }

    @Test("a revoked leaf is a rejection, not a retry")
    func revoked() throws {
        let world = try World(revokeLeaf: true)
        defer { world.transport.shutdown() }
        let error = #expect(throws: SignedDataError.self) { try world.verifier.verify(try world.jws()) }
        #expect(error?.code == .untrustedChain, "\(String(describing: error))")
        #expect(error?.isRetryable == false)
        #expect(error?.message.lowercased().contains("revoked") == true, "\(String(describing: error))")
    }

    @Test("a revoked intermediate is a rejection: OCSP is asked about the intermediate too")
    func revokedIntermediate() throws {
        let world = try World(revokeIntermediate: true)
        defer { world.transport.shutdown() }
        let error = #expect(throws: SignedDataError.self) { try world.verifier.verify(try world.jws()) }
        #expect(error?.code == .untrustedChain, "\(String(describing: error))")
        #expect(error?.message.lowercased().contains("revoked") == true, "\(String(describing: error))")
    }

    @Test("the intermediate's responder down, the leaf's good: no verdict (retryable)")
    func intermediateUnreachable() throws {
        let world = try World(intermediateResponder: false)
        defer { world.transport.shutdown() }
        let error = #expect(throws: SignedDataError.self) { try world.verifier.verify(try world.jws()) }
        #expect(error?.code == .revocationUnavailable, "\(String(describing: error))")
    }

    @Test("a responder that does not know the certificate (status unknown): no verdict (retryable), not a rejection")
    func unknownStatus() throws {
        let world = try World(leafUnknown: true)
        defer { world.transport.shutdown() }
        let error = #expect(throws: SignedDataError.self) { try world.verifier.verify(try world.jws()) }
        #expect(error?.code == .revocationUnavailable, "\(String(describing: error))")
        #expect(error?.isRetryable == true)
    }

    @Test("an online check stands 15 minutes: none within them, a new one after; headers with extra members share it")
    func onlineCacheLifetime() throws {
        let world = try World()
        defer { world.transport.shutdown() }
        let calls = Mutex(0)
        let verifier = world.verifier { curl, request, uri in
            calls.withLock { $0 += 1 }
            return try await curl.send(request, uri)
        }
        #expect(verifier.configuration.onlineCacheSeconds == 15 * 60, "the default")
        let now = Date()
        _ = try verifier.verify(try world.jws(), now: now)
        #expect(calls.withLock { $0 } == 2, "leaf and intermediate")
        for index in 0..<20 {
            let jws = try VerificationOrderTests.sign(
                world.chain, VerificationOrderTests.payload(), extra: ["n": index, "nonce": UUID().uuidString]
            )
            _ = try verifier.verify(jws, now: now.addingTimeInterval(Double(index)))
        }
        _ = try verifier.verify(try world.jws(), now: now.addingTimeInterval(14 * 60 + 50))
        #expect(calls.withLock { $0 } == 2, "within 15 minutes, from the cache")
        _ = try verifier.verify(try world.jws(), now: now.addingTimeInterval(15 * 60 + 10))
        #expect(calls.withLock { $0 } == 4, "after 15 minutes, checked again")
    }

    /// The slow chain's OCSP calls, as the test's own OCSP client sees them: inside a call, held until the test lets
    /// it go.
    struct SlowCalls {
        var entered = 0
        var released = false
    }

    @Test("two chains validate side by side: the fast one finishes while the slow one is still inside its OCSP call")
    func chainsInParallel() throws {
        let slow = try World()
        let fast = try World()
        defer {
            slow.transport.shutdown()
            fast.transport.shutdown()
        }
        // One verifier for both chains (one cache, one set of validations under way). The slow chain's OCSP calls
        // are held inside the test's client until the test releases them, so what is asserted is what the verifier
        // did (finished the fast chain while the slow one was held), not how long anything took.
        let curl = OCSPClient.curl(fast.transport)
        let slowPorts = [slow.leafResponder.port, slow.intermediateResponder?.port ?? 0]
        let calls = Mutex(SlowCalls())
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [slow.chain.root, fast.chain.root], onlineChecks: true),
            ocsp: OCSPClient { request, uri in
                if slowPorts.contains(where: { uri.contains(":\($0)/") }) {
                    calls.withLock { $0.entered += 1 }
                    while !calls.withLock({ $0.released }) { try await Task.sleep(for: .milliseconds(5)) }
                }
                return try await curl.send(request, uri)
            }
        )
        let slowJWS = try slow.jws()
        let fastJWS = try fast.jws()
        let slowVerified = Mutex<Bool?>(nil)
        let slowFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let verified = (try? verifier.verify(slowJWS))?.isSigned ?? false
            slowVerified.withLock { $0 = verified }
            slowFinished.signal()
        }
        // The slow chain is inside its OCSP call before the fast one starts.
        let deadline = Date(timeIntervalSinceNow: 60)
        while calls.withLock({ $0.entered }) == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        try #require(calls.withLock { $0.entered } > 0, "the slow chain never reached its OCSP call")

        // The fast chain, on a thread of its own so that a verifier that serialised validations cannot hang the test.
        let fastOutcome = Mutex<(verified: Bool, slowHeld: Bool)?>(nil)
        let fastFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let verified = (try? verifier.verify(fastJWS))?.isSigned ?? false
            // What the slow chain was doing when the fast one had its verdict.
            let held = calls.withLock { $0.entered > 0 && !$0.released } && slowVerified.withLock { $0 } == nil
            fastOutcome.withLock { $0 = (verified, held) }
            fastFinished.signal()
        }
        let fastDone = fastFinished.wait(timeout: .now() + 60) == .success
        calls.withLock { $0.released = true }
        #expect(fastDone, "the fast chain did not finish while the slow one was held in its OCSP call")
        if !fastDone { _ = fastFinished.wait(timeout: .now() + 60) }
        let outcome = fastOutcome.withLock { $0 }
        #expect(outcome?.verified == true, "the fast chain verified")
        #expect(outcome?.slowHeld == true, "the fast chain finished while the slow one was still in its OCSP call")
        // Released, the slow chain goes on to its own verdict.
        #expect(slowFinished.wait(timeout: .now() + 60) == .success)
        #expect(slowVerified.withLock { $0 } == true)
    }
}
#endif
