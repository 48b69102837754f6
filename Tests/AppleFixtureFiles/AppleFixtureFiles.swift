import Foundation

/// Real Apple data from `../shared/fixtures/apple` (see its README), read in place beside the repository and never
/// copied into it. Shared by every test target that needs it.
public enum AppleFixtureFiles {
    /// The repository root (this file is Tests/AppleFixtureFiles/AppleFixtureFiles.swift).
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // AppleFixtureFiles
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root

    public static let directory: URL = repositoryRoot.appendingPathComponent("../shared/fixtures/apple")
        .standardizedFileURL

    /// The named file's bytes; a clear error when the shared fixtures are absent.
    public static func bytes(_ name: String) throws -> [UInt8] {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else { throw MissingFixture(name: name, path: url.path) }
        return Array(try Data(contentsOf: url))
    }

    /// The named file as UTF-8 text.
    public static func text(_ name: String) throws -> String {
        let bytes = try bytes(name)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MissingFixture(name: name, path: directory.appendingPathComponent(name).path, notText: true)
        }
        return text
    }
}

public struct MissingFixture: Error, CustomStringConvertible {
    public var name: String
    public var path: String
    public var notText = false

    public var description: String {
        notText
            ? "Apple fixture \(name) at \(path) is not UTF-8 text"
            : "Apple fixture \(name) is missing at \(path): the shared fixtures (../shared/fixtures/apple next to "
                + "the repository) must be present to run this test"
    }
}
