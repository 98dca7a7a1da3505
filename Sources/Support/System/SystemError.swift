// APNs Sandbox — errors from system calls.
import Glibc

/// A failed system call: which call and the `errno` it left.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
