#if os(Linux)
import AppStoreClient
import AppStoreSignedData
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import Glibc
import LoopbackHTTP
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
        var intermediateResponder: Responder
        var transport: CurlMultiTransport

        init(revokeLeaf: Bool = false) throws {
            let leafPort = try Responder.freePort()
            var intermediatePort = try Responder.freePort()
            while intermediatePort == leafPort { intermediatePort = try Responder.freePort() }
            var options = SigningChain.Options()
            options.leafOCSPURL = "http://127.0.0.1:\(leafPort)/ocsp"
            options.intermediateOCSPURL = "http://127.0.0.1:\(intermediatePort)/ocsp"
            chain = try SigningChain(options)
            leafResponder = try Responder(
                port: leafPort, ca: chain.intermediate, key: chain.intermediateKey,
                issued: [(chain.leaf, revokeLeaf ? Date(timeIntervalSinceNow: -3600) : nil)]
            )
            intermediateResponder = try Responder(
                port: intermediatePort, ca: chain.root, key: chain.rootKey, issued: [(chain.intermediate, nil)]
            )
            CurlGlobal.initialize()
            transport = try CurlMultiTransport()
        }

        var verifier: SignedDataVerifier {
            SignedDataVerifier(
                configuration: .init(rootCertificates: [chain.root], onlineChecks: true), ocsp: .curl(transport)
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
        world.intermediateResponder.stop()
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
}
#endif
