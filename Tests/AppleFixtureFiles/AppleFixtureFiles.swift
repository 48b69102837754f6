import Foundation
import Testing

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

    /// Whether the shared fixtures are there.
    public static var isPresent: Bool {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory)
        return exists && isDirectory.boolValue
    }

    /// In CI (`CI=true`) the fixtures are required: the tests that read them run, and fail loudly when they are
    /// missing. Elsewhere those tests are skipped without them.
    public static var required: Bool {
        ProcessInfo.processInfo.environment["CI"]?.lowercased() == "true"
    }

    /// The one line a skipped test shows: what is missing, and where it is expected.
    public static var missingNote: String {
        "the real Apple data is missing: expected at \(directory.path) (../shared/fixtures/apple beside the repository)"
    }

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

    /// The `signedPayload` of Apple's real signed V2 TEST notification (apple-signed-v2-test-notification.json).
    public static func appleTestNotification() throws -> String {
        let name = "apple-signed-v2-test-notification.json"
        let object = try JSONSerialization.jsonObject(with: Data(try bytes(name))) as? [String: Any]
        guard let payload = object?["signedPayload"] as? String else {
            throw MissingFixture(name: name, path: directory.appendingPathComponent(name).path, notText: true)
        }
        return payload
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

extension Trait where Self == ConditionTrait {
    /// For tests that read `../shared/fixtures/apple`: skipped, with one line saying what is missing and where,
    /// when the fixtures are absent outside CI; run (and failing loudly) in CI.
    public static var needsAppleFixtures: Self {
        .enabled(
            if: AppleFixtureFiles.isPresent || AppleFixtureFiles.required,
            Comment(rawValue: AppleFixtureFiles.missingNote)
        )
    }
}
