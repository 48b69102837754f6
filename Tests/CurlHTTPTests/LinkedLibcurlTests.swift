import CCurl
import Foundation
import Testing

@testable import CurlHTTP

/// What the transport decides from the libcurl linked at run time. `scripts/test-libcurl8.sh` runs the transport's
/// suites again against libcurl 8 and sets `EXPECT_LIBCURL_MAJOR=8`, so that a run that silently loaded the system's
/// libcurl instead fails here.
@Suite struct LinkedLibcurlTests {
    private static var linkedVersion: String { String(cString: curl_version_info(CURLVERSION_FIRST).pointee.version) }

    @Test func theRunUsesTheLibcurlItAskedFor() throws {
        let major = try #require(Int(Self.linkedVersion.split(separator: ".")[0]))
        #expect(UInt32(major) == CurlGlobal.linkedVersionNumber >> 16)
        if let expected = ProcessInfo.processInfo.environment["EXPECT_LIBCURL_MAJOR"] {
            #expect(String(major) == expected, "libcurl \(Self.linkedVersion) linked; \(expected).x expected")
        }
    }

    @Test func uploadBuffersPerTransferBefore8_7() {
        let parts = Self.linkedVersion.split(separator: ".").compactMap { Int($0.prefix { $0.isNumber }) }
        let before8_7 = parts.count >= 2 && (parts[0] < 8 || (parts[0] == 8 && parts[1] < 7))
        #expect(CurlGlobal.libcurlGivesEachTransferAnUploadBuffer == before8_7)
    }
}
