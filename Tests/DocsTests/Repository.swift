import Foundation

/// Files of this repository, found from this file's path (Tests/DocsTests/Repository.swift).
enum Repository {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // DocsTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every file under `directory` whose name ends with `suffix`, as (path, text).
    static func files(under directory: String, suffix: String) throws -> [(path: String, text: String)] {
        let base = root.appendingPathComponent(directory)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else {
            throw MissingFile(path: base.path)
        }
        var found: [(String, String)] = []
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(suffix) else { continue }
            found.append((directory + "/" + relative, try text(directory + "/" + relative)))
        }
        guard !found.isEmpty else { throw MissingFile(path: base.path) }
        return found.sorted { $0.0 < $1.0 }
    }

    /// Whether `name` appears in `text` as a whole word: not as part of a longer identifier
    /// (APPLE_SHARED_SECRET in APPLE_SHARED_SECRET_FILE, receipt_requeue in receipt_requeue_dead).
    static func mentions(_ text: String, _ name: String) -> Bool {
        let pattern = "(?<![A-Za-z0-9_])" + NSRegularExpression.escapedPattern(for: name) + "(?![A-Za-z0-9_])"
        return text.range(of: pattern, options: .regularExpression) != nil
    }

    /// The built `receipt-worker`: `RECEIPT_WORKER_BINARY`, else beside the test runner (`.build/debug`), where
    /// `swift build --build-tests` puts both.
    static func executable() throws -> String {
        let explicit = ProcessInfo.processInfo.environment["RECEIPT_WORKER_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
        let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("receipt-worker").path
        let path = explicit ?? beside
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw MissingFile(path: path + " (build it: swift build --build-tests; or set RECEIPT_WORKER_BINARY)")
        }
        return path
    }

    struct MissingFile: Error, CustomStringConvertible {
        var path: String
        var description: String { "no file found at \(path)" }
    }
}
