import Foundation

/// `openssl s_server` on 127.0.0.1 with a certificate generated for the run by `openssl req` (self-signed, for the
/// names given): a real TLS peer for the transport's certificate and host-name checks. Stopped on `stop()` or deinit.
final class TLSServer {
    let port: Int
    /// The certificate the server presents (PEM).
    let certificatePath: String
    private let process: Process
    private let directory: URL

    /// Starts the server with a new key and a certificate for `commonName` and `subjectAltName`
    /// (for example `IP:127.0.0.1` or `DNS:wrong.example`).
    init(commonName: String, subjectAltName: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        certificatePath = directory.appendingPathComponent("cert.pem").path
        let (status, output) = try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-keyout", key, "-out", certificatePath, "-subj", "/CN=\(commonName)",
            "-addext", "subjectAltName=\(subjectAltName)",
        ])
        guard status == 0 else { throw TLSServerError("openssl req failed (\(status)): \(output)") }

        let log = directory.appendingPathComponent("server.out")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", certificatePath, "-key", key, "-www"]
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()
        // s_server prints "ACCEPT 127.0.0.1:PORT" once it listens.
        let deadline = Date(timeIntervalSinceNow: 30)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            found = text.firstMatch(of: /ACCEPT 127\.0\.0\.1:(\d+)/).flatMap { Int($0.output.1) }
            if found == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard let found else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw TLSServerError("openssl s_server did not start listening: \(text)")
        }
        port = found
    }

    deinit {
        stop()
    }

    func url(_ path: String, host: String = "127.0.0.1") -> String {
        "https://\(host):\(port)\(path)"
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: the test process may hand its children SIGTERM ignored or blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// What `openssl s_client` says of this server when it does not stop at a verification error: the handshake
    /// completes, and the reason the certificate does not verify.
    func clientReport(verifyingHost host: String) throws -> String {
        try Self.openssl(
            ["s_client", "-connect", "127.0.0.1:\(port)", "-verify_hostname", host, "-servername", host],
            input: "Q\n"
        ).output
    }

    /// Runs `openssl` with `arguments`; returns its status and its standard output and error together.
    @discardableResult
    static func openssl(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = standardInput
        try process.run()
        standardInput.fileHandleForWriting.write(Data(input.utf8))
        try standardInput.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

struct TLSServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
