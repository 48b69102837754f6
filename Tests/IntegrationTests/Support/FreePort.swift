#if os(Linux)
import LoopbackHTTP

/// A loopback TCP port that was free a moment ago (bound to port 0, read, closed).
func freePort() throws -> Int {
    let listener = try LoopbackListener()
    listener.stop()
    return listener.port
}
#endif
