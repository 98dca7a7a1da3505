// APNs Sandbox — the instances' temporary directories: emptied and reused rather than deleted and made.
import Glibc
import Synchronization
import Support

/// The instances' temporary directories (`<data>/instances/<instanceId>`), recycled.
///
/// ### Why
/// On ext4 a new directory's inode is found by skipping every inode of its group deleted in the last
/// minutes (`find_inode_bit` → `recently_deleted`), so one `mkdir` and one delete per notification made each
/// `mkdir` slower the more notifications had run: under a burst of exec instances it took ~20 % of the
/// server's CPU samples. An instance's emptied directory is instead renamed into `<data>/instances/.free/`
/// and renamed back, its mode reset, for a later instance: to that instance it is a new, empty directory.
/// A directory that cannot be emptied, or beyond ``limit`` kept, is removed as before.
final class InstanceDirectories: Sendable {
    /// Directories kept for reuse at most.
    static let limit = 1024

    private let free: String

    private struct State {
        var names: [String] = []
        var next = 0
        var hasFreeDirectory = false
    }

    private let state = Locked(State())

    /// - Parameter root: `<data>/instances`.
    init(root: String) {
        free = root + "/.free"
    }

    /// Directories kept for reuse now.
    var freeCount: Int { state.withLock { $0.names.count } }

    /// Makes `path` (mode 0755): a recycled empty directory when one is kept, else a new one.
    /// - Throws: ``FileSystemError`` when it cannot be made.
    func make(_ path: String) throws {
        if let name = state.withLock({ $0.names.popLast() }), rename(free + "/" + name, path) == 0 {
            chmod(path, 0o755)
            return
        }
        try FileSystem.makeDirectories(path)
    }

    /// Empties `path` and keeps it for reuse; removes it when it cannot be emptied or enough are kept.
    func recycle(_ path: String) {
        let name = state.withLock { state -> String? in
            guard state.names.count < Self.limit else { return nil }
            state.next += 1
            return "\(state.next)"
        }
        guard let name, Self.isDirectory(path), FileSystem.removeContents(of: path), prepareFreeDirectory(),
            rename(path, free + "/" + name) == 0
        else {
            FileSystem.removeTree(path)
            return
        }
        state.withLock { $0.names.append(name) }
    }

    private func prepareFreeDirectory() -> Bool {
        if state.withLock({ $0.hasFreeDirectory }) { return true }
        guard (try? FileSystem.makeDirectories(free)) != nil else { return false }
        state.withLock { $0.hasFreeDirectory = true }
        return true
    }

    /// A directory itself, not a symbolic link to one.
    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
