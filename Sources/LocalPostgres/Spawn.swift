import Foundation

#if os(Linux)
/// Starts `argv` (`argv[0]` an absolute path) in `workingDirectory` with this process's environment, reads its
/// stdout and stderr until they close, and waits for it. Returns the exit status (or 128 + signal) and the output.
///
/// The child inherits no descriptor but 0 (/dev/null), 1 and 2 (the pipe), default signal handling and an empty
/// signal mask, whatever this process has set up for itself.
func spawnAndWait(_ argv: [String], workingDirectory: String) throws -> (status: Int32, output: String) {
    var pipeEnds: [Int32] = [-1, -1]
    guard GNU.pipe2(&pipeEnds, O_CLOEXEC) == 0 else { throw spawnError("pipe2", argv) }
    let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
    defer { close(readEnd) }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
    posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
    GNU.closeFrom3(&actions)
    GNU.changeDirectory(&actions, workingDirectory)

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

    var pid = pid_t()
    let copies = argv.map { strdup($0) } + [nil]
    defer { copies.forEach { free($0) } }
    let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, copies, environ)
    close(writeEnd)
    guard spawned == 0 else {
        errno = spawned
        throw spawnError("posix_spawn", argv)
    }

    let output = readToEnd(readEnd)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
        guard errno == EINTR else { throw spawnError("waitpid", argv) }
    }
    let signal = status & 0x7f
    return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, output)
}

/// The GNU extensions of glibc that Swift's Glibc module leaves out (they need `_GNU_SOURCE`), looked up once.
private enum GNU {
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias ChangeDirectory =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32

    private static let pipe2Function: Pipe2? = lookUp("pipe2")
    /// glibc 2.34 and later.
    private static let closeFromFunction: CloseFrom? = lookUp("posix_spawn_file_actions_addclosefrom_np")
    /// glibc 2.29 and later.
    private static let changeDirectoryFunction: ChangeDirectory? = lookUp("posix_spawn_file_actions_addchdir_np")

    static func pipe2(_ ends: inout [Int32], _ flags: Int32) -> Int32 {
        guard let pipe2Function else { return -1 }
        return ends.withUnsafeMutableBufferPointer { pipe2Function($0.baseAddress, flags) }
    }

    /// Closes every descriptor above 2 in the child; with an older glibc, those open now that would survive exec.
    static func closeFrom3(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFromFunction {
            _ = closeFromFunction(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
    }

    /// Runs the child in `directory`; with an older glibc it keeps this process's directory.
    static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ directory: String) {
        _ = changeDirectoryFunction?(&actions, directory)
    }

    private static func lookUp<Function>(_ name: String) -> Function? {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }
}

private func readToEnd(_ descriptor: Int32) -> String {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            data.append(contentsOf: buffer[0..<count])
        } else if count == 0 || errno != EINTR {
            break
        }
    }
    return String(decoding: data, as: UTF8.self)
}

private func spawnError(_ call: String, _ argv: [String]) -> LocalPostgresError {
    LocalPostgresError(
        code: .commandFailed,
        message: "\(call) failed for `\(argv.joined(separator: " "))`: \(String(cString: strerror(errno)))"
    )
}

#else

/// Starts `argv` in `workingDirectory`, reads its combined output and waits for it. On Darwin,
/// `Foundation.Process` watches the child itself (not a descriptor the server would inherit), so it is used.
func spawnAndWait(_ argv: [String], workingDirectory: String) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: argv[0])
    process.arguments = Array(argv.dropFirst())
    process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    process.standardInput = FileHandle.nullDevice
    do {
        try process.run()
    } catch {
        throw LocalPostgresError(code: .commandFailed, message: "cannot run \(argv[0]): \(error)")
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let status = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    return (status, String(decoding: data, as: UTF8.self))
}

#endif
