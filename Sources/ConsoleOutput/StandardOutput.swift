#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes out what `print` buffered (standard output is block-buffered when it is a file or a pipe, and a reader
/// may be waiting for a line). `fflush(nil)` flushes every stdio stream: Swift 6 refuses to touch the C global
/// `stdout`.
public func flushStandardOutput() {
    fflush(nil)
}
