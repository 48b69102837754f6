#if os(Linux)
import AppStoreModel
import CurlHTTP
import FakeAppStore
import Foundation
import Glibc
import Testing

/// The built `receipt-worker` binary, run as users run it: exit codes, messages, signals, and what it leaves behind.
/// Children are started with posix_spawn, their output going to a file: Foundation.Process waits on a descriptor
/// that a grandchild (the demo's PostgreSQL) could inherit, and a test must fail, not hang, if one is left behind.
@Suite("receipt-worker on the command line", .ownThread)
struct CommandLineTests {
    @Test("demo: every outcome, a Sandbox credit, exit 0, and no PostgreSQL left behind")
    func demo() throws {
        let child = try ChildProcess(
            ["demo", "--apple-latency-ms", "20", "--apple-jitter-ms", "20"],
            environment: ChildProcess.environment(removing: ["DATABASE_URL"])
        )
        let status = child.wait(timeout: 240)
        let output = child.output
        try #require(status == 0, "demo exited with \(status.map(String.init) ?? "nothing, still running"):\n\(output)")
        // Each order's verdict, read from the state, reason and environment columns of the verdicts table (a
        // scenario's label names what it shows, so it may itself contain a reason's word).
        let rows = try Self.table(after: "Verdicts (", in: output)
        let expected: [(label: String, state: String, reason: String, environment: String)] = [
            ("production purchase", "verified", "-", "Production"),
            ("sandbox (App Review)", "verified", "-", "Sandbox"),
            ("refunded purchase", "rejected", "refunded", "Production"),
            ("paid for other product", "rejected", "product_mismatch", "Production"),
            ("another app's receipt", "rejected", "bundle_mismatch", "Production"),
            ("Apple fails 3 times", "verified", "-", "Production"),
            ("expired subscription", "rejected", "expired", "Production"),
            ("garbage, not base64", "rejected", "malformed_input", "-"),
            ("StoreKit 2 purchase", "verified", "-", "Production"),
            ("StoreKit 2, refunded", "rejected", "refunded", "Production"),
            ("StoreKit 2, other product", "rejected", "product_mismatch", "Production"),
            ("StoreKit 2, forged signature", "rejected", "invalid_signature", "-"),
            ("replay of order-01", "rejected", "already_credited", "Production"),
            ("replay of order-10", "rejected", "already_credited", "Production"),
            ("StoreKit 2 subscription", "verified", "-", "Production"),
            ("app died; Apple told us", "verified", "-", "Production"),
        ]
        #expect(rows.count == expected.count, "\(rows)")
        for order in expected {
            let row = rows.first { $0["what it shows"] == order.label }
            #expect(row?["state"] == order.state, "\(order.label): \(String(describing: row))")
            #expect(row?["reason"] == order.reason, "\(order.label): \(String(describing: row))")
            #expect(row?["environment"] == order.environment, "\(order.label): \(String(describing: row))")
        }
        #expect(rows.first { $0["what it shows"] == "Apple fails 3 times" }?["attempts"] == "4")
        let ledger = try Self.table(after: "Ledger (", in: output)
        #expect(ledger.count == 6, "one ledger row per verified order: \(ledger)")
        #expect(ledger.filter { $0["user"] == "paula" }.count == 1, "phase 5's lost order: \(ledger)")
        #expect(ledger.filter { $0["user"] == "olivia" }.count == 1, "phase 4's subscription: \(ledger)")
        #expect(ledger.filter { $0["environment"] == "Sandbox" }.count == 1, "\(ledger)")
        #expect(output.contains("Totals: 16 orders, 6 verified, 10 rejected, all as expected"), "\(output)")
        #expect(output.contains("receipt-worker demo: 16 sample orders"), "\(output)")
        // Issue 37: the order the API layer expected, completed by Apple's notification though the app sent nothing.
        let lost = try Self.table(after: "Lost order (", in: output)
        #expect(lost.map { $0["after"] ?? "" } == ["verified"], "\(lost)")
        #expect(lost.first?["brought by"] == "notification", "\(lost)")
        // One refund request (CONSUMPTION_REQUEST) answered by the worker, and received by the fake App Store.
        let refunds = try Self.table(after: "Refund request (", in: output)
        #expect(refunds.count == 1, "\(refunds)")
        #expect(refunds.first?["user"] == "ivan", "\(refunds)")
        #expect(refunds.first?["state"] == "answered", "\(refunds)")
        #expect(refunds.first?["refundPreference"] == "DECLINE", "\(refunds)")
        #expect(refunds.first?["Apple received"] == "the answer, as recorded", "\(refunds)")
        // A subscriber whose renewal charge failed, still served through the billing grace period (issue 23).
        let grace = try Self.table(after: "Subscriber in billing grace period (", in: output)
        #expect(grace.map { $0["status"] ?? "" } == ["active", "grace_period"], "\(grace)")

        let match = try #require(output.firstMatch(of: /data in (\/\S+)/), "the demo did not say where its data is")
        let dataDirectory = String(match.output.1)
        #expect(!FileManager.default.fileExists(atPath: dataDirectory), "\(dataDirectory) is still there")
        #expect(processes(mentioning: dataDirectory).isEmpty, "a process still runs on \(dataDirectory)")
        #expect(output.contains("\(dataDirectory) removed"))
    }

    @Test("demo with a stale DATABASE_URL exported: exit 1, saying that unsetting it gives a temporary cluster")
    func demoWithStaleDatabaseURL() throws {
        let child = try ChildProcess(
            ["demo", "--apple-latency-ms", "0", "--apple-jitter-ms", "0"],
            environment: ChildProcess.environment(setting: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/gone"])
        )
        let status = child.wait(timeout: 120)
        #expect(status == 1, "\(child.output)")
        #expect(child.output.contains("unset DATABASE_URL"), "\(child.output)")
        #expect(child.output.contains("temporary PostgreSQL cluster"), "\(child.output)")
        #expect(!child.output.contains("Totals:"))
        #expect(!child.output.contains("fake App Store"), "started before the database was checked: \(child.output)")
    }

    @Test("demo: without PostgreSQL binaries it says what to install and exits non-zero")
    func demoWithoutPostgres() throws {
        let child = try ChildProcess(
            ["demo"],
            environment: ChildProcess.environment(removing: ["DATABASE_URL"], setting: ["PG_BIN": "/nonexistent"])
        )
        let status = child.wait(timeout: 60)
        #expect(status != nil && status != 0)
        #expect(child.output.contains("apt-get install -y postgresql"), "\(child.output)")
        #expect(!child.output.contains("Totals:"))
    }

    @Test("fake-appstore --port 0: prints where it listens, answers, checks the secret, exits 0 on SIGTERM")
    func fakeAppStore() throws {
        CurlGlobal.initialize()
        let child = try ChildProcess(
            ["fake-appstore", "--port", "0", "--threads", "1"],
            environment: ChildProcess.environment(
                removing: ["APPLE_SHARED_SECRET"], setting: ["FAKE_APPSTORE_SHARED_SECRET": "cli-secret"]
            )
        )
        let line = try #require(
            child.waitForLine(containing: "fake App Store listening:", timeout: 30),
            "no listening line:\n\(child.output)"
        )
        let match = try #require(
            line.firstMatch(of: /production (http:\/\/127\.0\.0\.1:(\d+)\/verifyReceipt) sandbox (\S+) stats (\S+)/)
        )
        let (production, port, sandbox) = (String(match.output.1), Int(match.output.2) ?? 0, String(match.output.3))
        #expect(port > 0 && port != 8090)
        #expect(sandbox == "http://127.0.0.1:\(port)/sandbox/verifyReceipt")

        let transport = try CurlMultiTransport()
        defer { transport.shutdown() }
        let receipt = ScenarioReceipt(
            environment: "Production", bundleId: "com.example.app",
            inApp: [InAppTransaction(productId: "coins", transactionId: "42", purchaseDateMs: 1_700_000_000_000)]
        ).base64()
        func status(_ url: String, password: String) throws -> Int? {
            let body = try JSONSerialization.data(withJSONObject: ["receipt-data": receipt, "password": password])
            let request = HTTPRequest(url: url, body: Array(body), totalTimeoutMilliseconds: 10_000)
            let response = try transport.send(request).get()
            #expect(response.status == 200)
            let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return json?["status"] as? Int
        }
        #expect(try status(production, password: "cli-secret") == 0)
        #expect(try status(sandbox, password: "cli-secret") == 21008)
        #expect(try status(production, password: "not-the-secret") == 21004)

        child.signal(SIGTERM)
        let exit = child.wait(timeout: 5)
        #expect(exit == 0, "fake-appstore after SIGTERM: \(exit.map(String.init) ?? "still running")\n\(child.output)")
    }

    /// Every other setting `work` needs is present, so the message must be about the missing one.
    @Test(
        "work without a required setting exits 2 and names it",
        arguments: [
            ("DATABASE_URL", ["DATABASE_URL"]),
            ("APPLE_SHARED_SECRET", ["APPLE_SHARED_SECRET", "APPLE_SHARED_SECRET_FILE"]),
        ]
    )
    func workWithoutSetting(name: String, unset: [String]) throws {
        var setting = [
            "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
            "APPLE_BUNDLE_IDS": "com.example.app",
        ]
        for variable in unset { setting[variable] = nil }
        let (status, output) = try run(["work"], removing: unset, setting: setting)
        #expect(status == 2, "\(output)")
        #expect(output.contains(name), "\(output)")
    }

    @Test("work without any required setting names every one of them in one run, exit 2")
    func workWithoutAnySetting() throws {
        let unset = ["DATABASE_URL", "APPLE_SHARED_SECRET", "APPLE_SHARED_SECRET_FILE", "APPLE_BUNDLE_IDS"]
        let (status, output) = try run(["work"], removing: unset, setting: [:])
        #expect(status == 2, "\(output)")
        #expect(output.hasPrefix("Error: 3 required settings are missing:"), "\(output)")
        for name in ["DATABASE_URL", "APPLE_SHARED_SECRET", "APPLE_BUNDLE_IDS"] {
            #expect(output.contains(name), "\(name) not named: \(output)")
        }
    }

    @Test("work with an unreadable shared secret file and no DATABASE_URL names both problems in one run, exit 2")
    func workWithTwoProblems() throws {
        let (status, output) = try run(
            ["work"], removing: ["DATABASE_URL", "APPLE_SHARED_SECRET"],
            setting: ["APPLE_SHARED_SECRET_FILE": "/nonexistent/secret", "APPLE_BUNDLE_IDS": "com.example.app"]
        )
        #expect(status == 2, "\(output)")
        #expect(output.hasPrefix("Error: 2 settings need fixing:"), "\(output)")
        #expect(output.contains("DATABASE_URL is not set"), "\(output)")
        #expect(output.contains("APPLE_SHARED_SECRET_FILE names /nonexistent/secret, which cannot be read"),
                "\(output)")
    }

    /// Each command's hint names the login that command connects as (docs/deployment.md, Database roles).
    @Test(
        "without DATABASE_URL, each command's hint names its own login",
        arguments: [
            (["enqueue", "--receipt-file", "/dev/null", "--order-id", "o", "--user-id", "u", "--product-id", "p"],
             "receipt_api_login"),
            (["migrate"], "receipt_owner@"),
            (["status"], "receipt_operator_login"),
            (["sweep"], "receipt_worker_login"),
        ]
    )
    func databaseURLHint(arguments: [String], login: String) throws {
        let (status, output) = try run(arguments, removing: ["DATABASE_URL"], setting: [:])
        #expect(status == 2, "\(output)")
        #expect(output.contains("DATABASE_URL is not set"), "\(output)")
        #expect(output.contains(login), "\(output)")
        for other in ["receipt_api_login", "receipt_owner@", "receipt_operator_login", "receipt_worker_login"]
        where other != login {
            #expect(!output.contains(other), "\(output)")
        }
    }

    @Test("errors are spelled alike whatever the exit status: configuration (2), failure (1), usage (64)")
    func errorSpelling() throws {
        let configuration = try run(
            ["work"], removing: ["DATABASE_URL"], setting: ["APPLE_SHARED_SECRET": "s", "APPLE_BUNDLE_IDS": "a"]
        )
        #expect(configuration.0 == 2 && configuration.1.hasPrefix("Error: "), "\(configuration)")
        let failure = try run(
            ["status"], removing: [], setting: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"]
        )
        #expect(failure.0 == 1 && failure.1.hasPrefix("Error: "), "\(failure)")
        let usage = try run(["no-such-command"], removing: [], setting: [:])
        #expect(usage.0 == 64 && usage.1.hasPrefix("Error: "), "\(usage)")
    }

    @Test("work with more calls in flight than it may open sockets exits 2 and says how to fix it")
    func workBeyondTheOpenFileLimit() throws {
        // The child inherits this process's hard limit: one call more than it allows.
        let maxInFlight = min(OpenFileLimit.raiseToHardLimit(), 1 << 40) + 1
        let (status, output) = try run(
            ["work"], removing: [],
            setting: [
                "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
                "APPLE_BUNDLE_IDS": "com.example.app", "MAX_IN_FLIGHT": String(maxInFlight),
                // A socket per call with HTTP/1.1 (over HTTP/2 the calls share a few connections).
                "APPLE_HTTP_VERSION": "1.1",
            ]
        )
        #expect(status == 2, "\(output)")
        #expect(output.contains("MAX_IN_FLIGHT \(maxInFlight)"), "\(output)")
        #expect(output.contains("LimitNOFILE"), "\(output)")
    }

    @Test("work with a broken DATABASE_URL fails with a clear message that hides its password")
    func workWithBrokenDatabaseURL() throws {
        let (status, output) = try run(
            ["work"], removing: [],
            setting: [
                "DATABASE_URL": "postgresql://u:hunter2@[bad", "APPLE_SHARED_SECRET": "s",
                "APPLE_BUNDLE_IDS": "com.example.app",
            ]
        )
        #expect(status != nil && status != 0, "\(output)")
        #expect(output.contains("DATABASE_URL"), "\(output)")
        #expect(!output.contains("hunter2"), "the password leaked: \(output)")
    }

    /// The rows of the text table whose title line starts with `title`: each row by column name. The columns are
    /// separated by two spaces or more, the header is the line after the title, and a line of dashes follows it.
    static func table(after title: String, in output: String) throws -> [[String: String]] {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix(title) }, "no table \(title)…:\n\(output)")
        func cells(_ line: String) -> [String] {
            line.trimmingCharacters(in: .whitespaces).split(separator: /\s{2,}/).map(String.init)
        }
        let header = cells(lines[start + 1])
        return lines[(start + 3)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map { line in
            Dictionary(zip(header, cells(line)), uniquingKeysWith: { first, _ in first })
        }
    }

    /// Runs a command that exits by itself; returns its status (nil after 60 s) and output.
    private func run(_ arguments: [String], removing: [String], setting: [String: String]) throws -> (Int32?, String) {
        let environment = ChildProcess.environment(removing: removing, setting: setting)
        let child = try ChildProcess(arguments, environment: environment)
        let status = child.wait(timeout: 60)
        return (status, child.output)
    }

    /// The pids of processes whose command line contains `text`.
    private func processes(mentioning text: String) -> [String] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return pids.filter { $0.allSatisfy(\.isNumber) }.filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self).contains(text)
        }
    }
}

/// `receipt-worker` started with posix_spawn: stdout and stderr go to one temporary file, descriptors above 2 are
/// closed in the child, and signals start with their default actions. Killed and reaped on deinit if still running.
final class ChildProcess {
    let pid: pid_t
    private let outputPath: String
    /// Where standard error goes when it is kept apart from standard output.
    private let errorPath: String?
    private var exitStatus: Int32?

    /// `separateErrors`: standard error is kept apart (`errors`) instead of interleaved into `output`.
    /// `executable`: another program to run (a shell that runs receipt-worker), instead of receipt-worker.
    init(
        _ arguments: [String], executable: String? = nil, environment: [String: String], separateErrors: Bool = false
    ) throws {
        let executable = try executable ?? Self.executable()
        outputPath = NSTemporaryDirectory() + "receipt-worker-cli-\(UUID().uuidString).out"
        errorPath = separateErrors ? outputPath + ".err" : nil

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let errorPath {
            posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        Self.closeDescriptorsAbove2(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        var allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child = pid_t()
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw ChildProcessError("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 10)
        }
        try? FileManager.default.removeItem(atPath: outputPath)
        if let errorPath { try? FileManager.default.removeItem(atPath: errorPath) }
    }

    /// Everything the child wrote so far, stdout and stderr interleaved (stdout alone with `separateErrors`).
    var output: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// What the child wrote to standard error, when it was kept apart.
    var errors: String {
        errorPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
    }

    func signal(_ number: Int32) {
        if exitStatus == nil { kill(pid, number) }
    }

    /// The exit status (128 + the signal number if a signal ended it), or nil if it still runs after `timeout`.
    func wait(timeout: Double) -> Int32? {
        if let exitStatus { return exitStatus }
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                let signal = status & 0x7f
                exitStatus = signal == 0 ? (status >> 8) & 0xff : 128 + signal
                return exitStatus
            }
            if reaped == -1 && errno != EINTR { return nil }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    /// The first output line containing `text`, waiting up to `timeout` for it.
    func waitForLine(containing text: String, timeout: Double) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if let line = output.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            if exitStatus != nil || wait(timeout: 0) != nil { return nil }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    /// Closes every descriptor above 2 in the child: `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34; the
    /// Swift Glibc module leaves it out, so it is looked up), else each one open now that would survive exec.
    private static func closeDescriptorsAbove2(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
    }

    /// This process's environment without `removing`, with `setting`.
    static func environment(removing: [String] = [], setting: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in removing { environment[name] = nil }
        environment.merge(setting) { $1 }
        return environment
    }

    /// `receipt-worker` beside the test bundle (`.build/debug`), or `RECEIPT_WORKER_BINARY`.
    static func executable() throws -> String {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["RECEIPT_WORKER_BINARY"], !explicit.isEmpty {
            candidates.append(explicit)
        }
        let bundle = Bundle.main.bundleURL
        let runner = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        for folder in [bundle, bundle.deletingLastPathComponent(), runner.deletingLastPathComponent()] {
            candidates.append(folder.appendingPathComponent("receipt-worker").path)
        }
        if let found = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) { return found }
        throw ChildProcessError(
            "receipt-worker is not built: looked for \(candidates.joined(separator: ", ")). "
                + "Build it first (swift build --build-tests builds it), or set RECEIPT_WORKER_BINARY"
        )
    }
}

struct ChildProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
#endif
