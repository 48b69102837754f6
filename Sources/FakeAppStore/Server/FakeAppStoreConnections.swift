/// The connections the fake App Store has accepted since it started, counted on its side.
public struct FakeAppStoreConnections: Sendable, Equatable, Codable {
    /// Connections accepted in all.
    public var accepted = 0
    /// Connections open now.
    public var open = 0
    /// The most connections open at once.
    public var peakOpen = 0
    /// Connections that spoke HTTP/2 (with prior knowledge, or chosen through ALPN).
    public var http2 = 0
    /// Connections that spoke HTTP/1.x.
    public var http1 = 0

    public init() {}
}
