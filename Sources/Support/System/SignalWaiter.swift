// APNs Sandbox — waiting for SIGTERM/SIGINT without async signal handlers.
import CLinuxSystem
import Glibc

/// Blocks SIGTERM and SIGINT for the process and lets one thread wait for them on a signalfd.
///
/// Create it first thing in `main`, before any other thread starts, so every thread inherits
/// the blocked mask and the signals are only ever seen through the signalfd.
public final class SignalWaiter {
    private let fd: Int32

    public init() throws {
        CLinuxSystem_ignore_sigpipe()
        let fd = CLinuxSystem_signalfd_term()
        guard fd >= 0 else { throw SystemError(call: "signalfd", errno: errno) }
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Blocks until SIGTERM or SIGINT arrives; returns the signal number.
    public func wait() -> Int32 {
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n = poll(&pfd, 1, -1)
            if n < 0 && errno == EINTR { continue }
            let signal = CLinuxSystem_signalfd_read(fd)
            if signal > 0 { return signal }
        }
    }
}
