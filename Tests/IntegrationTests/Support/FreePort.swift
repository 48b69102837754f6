#if os(Linux)
import Glibc

/// A TCP socket bound to a free port on 127.0.0.1, and that port. The caller owns the socket.
func boundLoopbackSocket() throws -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestSetupError("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
        }
    }
    guard bound else {
        let code = errno
        close(socket)
        throw TestSetupError("bind: errno \(code)")
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}

/// A loopback TCP port that was free a moment ago (bind to port 0, read it, close).
func freePort() throws -> Int {
    let (socket, port) = try boundLoopbackSocket()
    close(socket)
    return port
}
#endif
