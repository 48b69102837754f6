import Foundation

/// A TCP port on 127.0.0.1 that was free a moment ago: bind to port 0, read what the kernel chose, close.
/// Another process may take it before the server binds it, which is why starting retries.
func findFreePort() throws -> Int {
    #if canImport(Glibc)
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else {
        throw LocalPostgresError(code: .setupFailed, message: "socket() failed: errno \(errno)")
    }
    defer { close(descriptor) }

    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
        }
    }
    guard bound else {
        throw LocalPostgresError(code: .setupFailed, message: "cannot bind a TCP socket on 127.0.0.1: errno \(errno)")
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
