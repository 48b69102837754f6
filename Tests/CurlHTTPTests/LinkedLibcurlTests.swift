import CCurl
import Foundation
import Testing

@testable import CurlHTTP

/// What the transport decides from the libcurl linked at run time. `scripts/test-libcurl8.sh` runs the transport's
/// suites again against libcurl 8 and sets `EXPECT_LIBCURL_MAJOR=8`, so that a run that silently loaded the system's
/// libcurl instead fails here.
@Suite struct LinkedLibcurlTests {
    /// The linked libcurl's version as it spells it ("7.88.1", "8.14.1").
    private static func linkedVersion() throws -> String {
        let info = try #require(curl_version_info(CURLVERSION_FIRST))
        return String(cString: try #require(info.pointee.version))
    }

    /// The version's numbers, major first.
    private static func linkedNumbers() throws -> [Int] {
        try linkedVersion().split(separator: ".").compactMap { Int($0.prefix { $0.isNumber }) }
    }

    @Test func theRunUsesTheLibcurlItAskedFor() throws {
        let major = try #require(try Self.linkedNumbers().first)
        #expect(UInt32(major) == CurlGlobal.linkedVersionNumber >> 16)
        #expect(CurlMultiTransport.isLibcurl8OrLater == (major >= 8))
        if let expected = ProcessInfo.processInfo.environment["EXPECT_LIBCURL_MAJOR"] {
            let version = try Self.linkedVersion()
            #expect(String(major) == expected, "libcurl \(version) linked; \(expected).x expected")
        }
    }

    @Test func uploadBuffersPerTransferBefore8_7() throws {
        let numbers = try Self.linkedNumbers()
        try #require(numbers.count >= 2)
        let before8_7 = numbers[0] < 8 || (numbers[0] == 8 && numbers[1] < 7)
        #expect(CurlGlobal.libcurlGivesEachTransferAnUploadBuffer == before8_7)
    }
}
