// APNs Sandbox — the one helper that makes system calls and turns their failures into `SystemError`s.
import CLinuxSystem
import Glibc
import Support

/// The outcome of a non-blocking call: a value, or "would block".
enum IOResult<T> {
    case processed(T)
    case wouldBlock
}

/// Runs `body` and retries on EINTR; EAGAIN becomes `.wouldBlock`; other failures throw.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ call: StaticString, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .processed(result) }
        let code = Glibc.errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
        throw SystemError(call: "\(call)", errno: code)
    }
}

/// Like `syscall` for calls that never legitimately block.
@inline(__always)
@discardableResult
func syscallChecked<T: FixedWidthInteger>(_ call: StaticString, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw SystemError(call: "\(call)", errno: code)
    }
}
