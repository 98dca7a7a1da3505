// APNs Sandbox — small, careful file I/O for key material.
import Foundation
import Glibc

/// File helpers for TLS material: exact permissions regardless of the umask, and atomic
/// replacement (write a temporary file, `fsync`, `rename`), so a crash never leaves a
/// half-written key or certificate behind.
enum FileStore {
    /// Creates `path` (and missing parents) when absent; a directory this call creates gets
    /// `permissions` exactly. An existing directory is left as it is.
    /// - Throws: `CryptoError.fileSystem` when creation fails or `path` is not a directory.
    static func ensureDirectory(_ path: String, permissions: mode_t) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CryptoError.fileSystem("\(path) is not a directory", errno: ENOTDIR) }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path, !FileManager.default.fileExists(atPath: parent) {
            try ensureDirectory(parent, permissions: permissions)
        }
        if mkdir(path, permissions) != 0 {
            let code = errno
            guard code == EEXIST else { throw CryptoError.fileSystem("mkdir \(path)", errno: code) }
            return
        }
        // mkdir applies the umask; chmod sets the mode we asked for.
        guard chmod(path, permissions) == 0 else { throw CryptoError.fileSystem("chmod \(path)", errno: errno) }
    }

    /// Whether a file (of any kind) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The contents of `path`, or `nil` when it does not exist.
    /// - Throws: `CryptoError.fileSystem` for any other failure (for example permission denied).
    static func readIfPresent(_ path: String) throws -> [UInt8]? {
        let fd = try retryingEINTR("open \(path)", allowing: ENOENT) { open(path, O_RDONLY | O_CLOEXEC) }
        guard let fd else { return nil }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                try retryingEINTR("read \(path)") { read(fd, buffer.baseAddress, buffer.count) }
            } ?? 0
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[0..<count])
        }
    }

    /// Replaces `path` atomically with `bytes`, the new file having `permissions` exactly.
    /// - Throws: `CryptoError.fileSystem`; the temporary file is removed on failure.
    static func writeAtomically(_ bytes: [UInt8], to path: String, permissions: mode_t) throws {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let created = try retryingEINTR("create \(temporary)") {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        }
        guard let fd = created else { throw CryptoError.fileSystem("create \(temporary)", errno: EIO) }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            defer { close(fd) }
            // open applies the umask; fchmod sets the mode we asked for.
            guard fchmod(fd, permissions) == 0 else { throw CryptoError.fileSystem("fchmod \(temporary)", errno: errno) }
            var offset = 0
            while offset < bytes.count {
                let written = try bytes.withUnsafeBytes { buffer in
                    try retryingEINTR("write \(temporary)") {
                        write(fd, buffer.baseAddress?.advanced(by: offset), buffer.count - offset)
                    }
                } ?? 0
                offset += written
            }
            _ = try retryingEINTR("fsync \(temporary)") { fsync(fd) }
        }
        guard rename(temporary, path) == 0 else { throw CryptoError.fileSystem("rename to \(path)", errno: errno) }
        renamed = true
        syncDirectory(containing: path)
    }

    /// Flushes the directory entry of a rename; best effort (some file systems refuse it).
    private static func syncDirectory(containing path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Runs `call` until it does not fail with EINTR. Returns `nil` when it fails with
    /// `allowed`; throws `CryptoError.fileSystem` for any other failure.
    private static func retryingEINTR<Value: BinaryInteger>(
        _ what: @autoclosure () -> String, allowing allowed: Int32? = nil, _ call: () -> Value
    ) throws -> Value? {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            if code == allowed { return nil }
            throw CryptoError.fileSystem(what(), errno: code)
        }
    }
}
