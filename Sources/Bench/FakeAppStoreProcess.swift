import Foundation

/// The fake App Store in a child process (`receipt-worker fake-appstore`): its own file descriptor table (each call
/// in flight holds a socket on each side) and its own memory, so the figures of this process are the worker's.
final class FakeAppStoreProcess {
    let productionURL: String
    let sandboxURL: String
    /// Its `GET /stats` (and `POST /stats/reset`); nil when its line named none (the run's figures do without).
    let statsURL: String?
    private let process: Process

    /// Starts `command` (e.g. `[executable, "fake-appstore"]`) on a free loopback port and waits for its
    /// "listening" line. With `tlsCAFile`, the child serves TLS and writes its certificate authority there.
    init(
        command: [String], latencyMilliseconds: Int, jitterMilliseconds: Int, threads: Int, sharedSecret: String,
        tlsCAFile: String? = nil
    ) throws {
        guard let executable = command.first else { throw BenchError("no command to start the fake App Store") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst()) + [
            "--host", "127.0.0.1", "--port", "0", "--threads", String(threads),
            "--latency-ms", String(latencyMilliseconds), "--jitter-ms", String(jitterMilliseconds),
            "--log-level", "warning",
        ] + (tlsCAFile.map { ["--tls", "--tls-ca-file", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["FAKE_APPSTORE_SHARED_SECRET"] = sharedSecret
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        self.process = process

        // "fake App Store listening: production http://… sandbox http://… stats http://…"
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while !text.contains("\n"), Date() < deadline, process.isRunning {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let urls = Self.listeningURLs(text) else {
            process.terminate()
            throw BenchError("the fake App Store process did not start (it printed: \(text))")
        }
        productionURL = urls.production
        sandboxURL = urls.sandbox
        statsURL = urls.stats
    }

    /// The URLs of the fake's first line, "fake App Store listening: production http://… sandbox http://… stats
    /// http://…" (the next lines, which one read may bring along, are not read); nil without both verifyReceipt URLs.
    static func listeningURLs(_ output: String) -> (production: String, sandbox: String, stats: String?)? {
        let words = output.prefix { $0 != "\n" && $0 != "\r" }.split(whereSeparator: \.isWhitespace).map(String.init)
        func url(after name: String) -> String? {
            guard let index = words.firstIndex(of: name), index + 1 < words.count else { return nil }
            return words[index + 1]
        }
        guard let production = url(after: "production"), let sandbox = url(after: "sandbox") else { return nil }
        return (production, sandbox, url(after: "stats"))
    }

    /// The child's peak resident set size (VmHWM), in bytes.
    var peakResidentBytes: Int? {
        ProcessResources.peakResidentBytes(pid: process.processIdentifier)
    }

    var processIdentifier: Int32 { process.processIdentifier }

    /// CPU seconds the child has used so far.
    var cpuSeconds: Double? {
        ProcessTreeCPU.seconds(root: process.processIdentifier)
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
