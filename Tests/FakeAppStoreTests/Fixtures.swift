import AppleFixtureFiles
import Foundation
import Testing

/// The shared corpus of real Apple data, read in place from `../shared/fixtures/apple` next to the repository.
enum Fixtures {
    static let directory: URL = AppleFixtureFiles.directory

    /// The named fixture's text; fails the test with a clear message when the corpus is absent.
    static func text(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            Issue.record(
                """
                fixture \(name) not found at \(url.path): the real Apple data must be at ../shared/fixtures/apple \
                next to the repository (see its README); it is read in place, never copied
                """,
                sourceLocation: sourceLocation
            )
            throw FixtureMissing(path: url.path)
        }
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func data(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        Data(try text(name, sourceLocation: sourceLocation).utf8)
    }

    struct FixtureMissing: Error, CustomStringConvertible {
        var path: String
        var description: String { "missing fixture \(path)" }
    }
}
