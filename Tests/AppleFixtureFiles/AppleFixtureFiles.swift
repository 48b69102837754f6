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

    /// `../shared/fixtures/apple` beside the repository, or the folder `APPLE_FIXTURES_DIR` names (to run the tests
    /// against the data somewhere else, or, naming a folder that does not exist, as a clone without it would).
    /// Internal: tests read the data through ``bytes(_:)``, which checks that they are marked.
    static let directory: URL = {
        if let path = chosenDirectory {
            return URL(fileURLWithPath: path, relativeTo: repositoryRoot).standardizedFileURL
        }
        return repositoryRoot.appendingPathComponent("../shared/fixtures/apple").standardizedFileURL
    }()

    private static let chosenDirectory = ProcessInfo.processInfo.environment["APPLE_FIXTURES_DIR"].flatMap {
        $0.isEmpty ? nil : $0
    }

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
        "the real Apple data is missing: expected at \(directory.path) ("
            + (chosenDirectory == nil ? "../shared/fixtures/apple beside the repository" : "APPLE_FIXTURES_DIR") + ")"
    }

    /// The named file's bytes; a clear error when the shared fixtures are absent.
    ///
    /// Only a test marked `.needsAppleFixtures` (itself or through its suite) may read them: anywhere else the read
    /// records an issue and throws, whether the data is there or not, so a test that would fail in a clone without
    /// the data, rather than be skipped, fails everywhere from the start.
    public static func bytes(_ name: String) throws -> [UInt8] {
        try requireMarkedTest(reading: name)
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
        let object = try JSONSerialization.jsonObject(with: Data(try bytes(name)))
        guard let payload = (object as? [String: Any])?["signedPayload"] as? String else {
            throw MissingFixture(name: name, path: directory.appendingPathComponent(name).path, notText: true)
        }
        return payload
    }

    /// Whether `test` carries `.needsAppleFixtures`, itself or from its suite (Swift Testing hands a suite's
    /// condition traits down to each of its tests).
    public static func isMarked(_ test: Test) -> Bool {
        test.traits.contains { trait in
            (trait as? ConditionTrait)?.comments.contains { $0.rawValue == missingNote } == true
        }
    }

    /// Records an issue against the running test and throws when it is not marked `.needsAppleFixtures`, or when no
    /// test is running (a detached task or thread of a test cannot tell which test it serves: read the data in the
    /// test itself and hand it over).
    static func requireMarkedTest(reading name: String) throws {
        let test = Test.current
        if let test, isMarked(test) { return }
        let error = UnmarkedFixtureRead(name: name, test: test?.name)
        Issue.record(error)
        throw error
    }
}

/// A read of the real Apple data from a test not marked `.needsAppleFixtures`.
public struct UnmarkedFixtureRead: Error, CustomStringConvertible {
    public var name: String
    /// The test's name; nil when no test was running.
    public var test: String?

    public var description: String {
        guard let test else {
            return "Apple fixture \(name) read outside a test (a detached task or thread?): read the real Apple data "
                + "in a test marked .needsAppleFixtures"
        }
        return "test \(test) reads Apple fixture \(name) but is not marked .needsAppleFixtures (on the @Test or its "
            + "@Suite): in a clone without ../shared/fixtures/apple it would fail instead of being skipped"
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
    /// when the fixtures are absent outside CI; run (and failing loudly) in CI. ``AppleFixtureFiles/bytes(_:)``
    /// reads the data only in a test that carries it (``AppleFixtureFiles/isMarked(_:)`` finds it by its comment).
    public static var needsAppleFixtures: Self {
        .enabled(
            if: AppleFixtureFiles.isPresent || AppleFixtureFiles.required,
            Comment(rawValue: AppleFixtureFiles.missingNote)
        )
    }
}
