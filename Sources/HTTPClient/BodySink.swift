// APNs Sandbox — where one transfer's response body goes, within its byte limit.
import Glibc

/// Receives a transfer's body on the transfer thread: into memory, into a file, or nowhere, counting the
/// bytes and refusing the chunk that would pass the limit.
///
/// Confined to the transfer thread. The file is opened by ``open()`` and closed by ``close()`` (or the
/// first failed write), never by another thread.
final class BodySink {
    private let destination: HTTPClient.Destination
    let limit: Int
    private var fd: Int32 = -1
    private(set) var body: [UInt8] = []
    private(set) var count = 0
    /// Why the sink stopped the transfer, if it did.
    private(set) var failure: HTTPClient.Failure?

    private let onChunk: (@Sendable ([UInt8]) -> Void)?

    init(destination: HTTPClient.Destination, limit: Int, onChunk: (@Sendable ([UInt8]) -> Void)? = nil) {
        self.destination = destination
        self.limit = limit
        self.onChunk = onChunk
    }

    /// Creates the destination file; a failure to report when it cannot.
    func open() -> HTTPClient.Failure? {
        guard case .file(let path) = destination else { return nil }
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd < 0 else { return nil }
        return .file("open \(path): \(String(cString: strerror(errno)))")
    }

    /// Takes a chunk; false stops the transfer (``failure`` says why).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil else { return false }
        count += bytes.count
        guard count <= limit else {
            failure = .tooLarge(limit: limit)
            return false
        }
        onChunk?(Array(bytes))
        switch destination {
        case .memory:
            body.append(contentsOf: bytes)
        case .discard:
            break
        case .file:
            guard write(bytes) else {
                failure = .file("writing the download failed: \(String(cString: strerror(errno)))")
                close()
                return false
            }
        }
        return true
    }

    /// Closes the file, if one is open.
    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    private func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard fd >= 0, let base = bytes.baseAddress else { return fd >= 0 }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, base + offset, bytes.count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
