// APNs Sandbox — the few file system calls the extension runtime makes.
import Foundation
import Glibc

/// A file system call that failed, with `errno` in words.
struct FileSystemError: Error, CustomStringConvertible {
    let description: String

    init(_ call: String, _ path: String, errno code: Int32 = errno) {
        description = "\(call) \(path): \(String(cString: strerror(code)))"
    }
}

/// Paths, directories and moves (Glibc underneath; no Foundation on the hot paths).
enum FileSystem {
    /// Creates `path` and its missing parents (mode 0755).
    static func makeDirectories(_ path: String) throws {
        if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw FileSystemError("mkdir", path) }
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty, parent != path else { throw FileSystemError("mkdir", path, errno: ENOENT) }
        try makeDirectories(parent)
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw FileSystemError("mkdir", path) }
    }

    /// Removes `path` and everything under it; missing paths are fine, other failures are ignored.
    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes everything inside the directory `path`, each directory made writable first (symbolic links
    /// are removed, never followed); true when it is empty then.
    static func removeContents(of path: String) -> Bool {
        chmod(path, 0o700)
        guard let names = entries(of: path) else { return false }
        for name in names {
            let child = path + "/" + name
            var info = stat()
            if lstat(child, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                _ = removeContents(of: child)
                rmdir(child)
            } else {
                unlink(child)
            }
        }
        return entries(of: path)?.isEmpty == true
    }

    /// The names in a directory but `.` and `..`, or nil when it cannot be read.
    static func entries(of path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The canonical absolute path (symbolic links, `.` and `..` resolved), or nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Size of a regular file, or nil when `path` is not one (after following links).
    static func regularFileSize(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// Up to `count` bytes from the start of the file.
    static func readPrefix(_ path: String, count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { bytes in
                bytes.baseAddress.map { read(fd, $0 + filled, count - filled) } ?? 0
            }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            filled += n
        }
        return Array(buffer.prefix(filled))
    }

    /// Small files such as `/proc/<pid>/statm`: the whole content (at most `limit` bytes), or nil.
    static func readSmallFile(_ path: String, limit: Int = 4096) -> [UInt8]? {
        readPrefix(path, count: limit)
    }

    /// Moves a file (a rename, or a copy and delete across file systems).
    static func move(_ source: String, to destination: String) throws {
        if rename(source, destination) == 0 { return }
        guard errno == EXDEV else { throw FileSystemError("rename", source) }
        unlink(destination)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: destination)
        } catch {
            unlink(destination)
            throw FileSystemError("copy", source, errno: EIO)
        }
        unlink(source)
    }

    /// `text` as one safe path component: letters, digits, `.`, `_` and `-` kept, anything else `_`;
    /// never empty, `.` or `..`; at most 128 characters.
    static func safeComponent(_ text: String) -> String {
        var result = String(String.UnicodeScalarView(text.unicodeScalars.prefix(128).map { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": scalar
            default: "_"
            }
        }))
        if result.isEmpty || result.allSatisfy({ $0 == "." }) { result = "_" + result }
        return result
    }
}

/// Facts about the machine.
enum System {
    static let processorCount = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
}
