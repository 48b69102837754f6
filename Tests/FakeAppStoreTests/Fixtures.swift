import AppleFixtureFiles
import Foundation

/// The shared corpus of real Apple data, read in place from `../shared/fixtures/apple` next to the repository, by
/// tests marked `.needsAppleFixtures`.
enum Fixtures {
    /// The named fixture's text.
    static func text(_ name: String) throws -> String {
        try AppleFixtureFiles.text(name)
    }

    static func data(_ name: String) throws -> Data {
        Data(try text(name).utf8)
    }
}
