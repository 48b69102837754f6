import AppleFixtureFiles
import Foundation
import Testing

/// The real Apple data is read only by tests that are skipped without it (issue 39: a test that read it unmarked
/// failed every clone without `../shared/fixtures/apple` instead of being skipped).
@Suite("Reading the real Apple data")
struct MarkedReadsTests {
    static let name = "apple-signed-v2-test-notification.json"

    @Test("a test not marked .needsAppleFixtures that reads the data fails, whether the data is there or not")
    func unmarkedReadFails() throws {
        var thrown: (any Error)?
        try withKnownIssue {
            do {
                _ = try AppleFixtureFiles.bytes(Self.name)
            } catch {
                thrown = error
                throw error
            }
        } matching: { issue in
            issue.error is UnmarkedFixtureRead
        }
        let error = thrown as? UnmarkedFixtureRead
        #expect(error?.name == Self.name)
        #expect(error?.test == "unmarkedReadFails()")
    }

    @Test("every reader checks: text and the TEST notification too")
    func everyReaderChecks() throws {
        try withKnownIssue {
            _ = try AppleFixtureFiles.text(Self.name)
        } matching: { $0.error is UnmarkedFixtureRead }
        try withKnownIssue {
            _ = try AppleFixtureFiles.appleTestNotification()
        } matching: { $0.error is UnmarkedFixtureRead }
    }

    @Test("a marked test reads it", .needsAppleFixtures)
    func markedTestReads() throws {
        #expect(try AppleFixtureFiles.appleTestNotification().split(separator: ".").count == 3)
    }

    @Test("a test without the mark is not marked")
    func unmarkedIsNotMarked() throws {
        #expect(AppleFixtureFiles.isMarked(try #require(Test.current)) == false)
    }

    /// The check above holds only for reads through AppleFixtureFiles: no other test code names the data's folder.
    @Test("no test source but AppleFixtureFiles names the data's folder outside a comment")
    func onlyTheLoaderNamesTheFolder() throws {
        let tests = AppleFixtureFiles.repositoryRoot.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("AppleFixtureFiles/") }
        #expect(files.count > 100, "the test sources were not found under \(tests.path)")
        var found: [String] = []
        for file in files {
            let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                // (Spelled in two pieces, so that this line does not name them.)
                if ["fixtures" + "/apple", "APPLE_FIXTURES" + "_DIR"].contains(where: { code.contains($0) }) {
                    found.append("Tests/\(file):\(number + 1)")
                }
            }
        }
        #expect(found.isEmpty, "read the real Apple data through AppleFixtureFiles, in a marked test: \(found)")
    }

    @Suite("a suite marked .needsAppleFixtures", .needsAppleFixtures)
    struct MarkedSuite {
        @Test("its tests read the data without a mark of their own")
        func readsThroughSuite() throws {
            #expect(AppleFixtureFiles.isMarked(try #require(Test.current)))
            #expect(try AppleFixtureFiles.bytes(MarkedReadsTests.name).isEmpty == false)
        }
    }
}
