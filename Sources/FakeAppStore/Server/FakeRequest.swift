import NIOCore
import NIOHTTP1

/// One request as the fake's routes see it, whichever HTTP version carried it.
struct FakeRequest {
    var method: HTTPMethod
    /// The request target: the path and any query.
    var uri: String
    /// The `Authorization` header, if any.
    var authorization: String?
    var body: ByteBuffer

    /// `uri` without its query.
    var path: String {
        guard let query = uri.firstIndex(of: "?") else { return uri }
        return String(uri[..<query])
    }
}
