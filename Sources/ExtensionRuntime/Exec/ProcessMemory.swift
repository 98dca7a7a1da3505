// APNs Sandbox — the resident memory of an exec extension's process tree, from /proc.
import Glibc

/// What `/proc/<pid>/stat` says about one process.
struct ProcessStatus: Equatable {
    /// The parent's pid.
    var parent: pid_t
    /// The process group id.
    var group: pid_t
    /// A zombie: it has exited and waits to be reaped.
    var isZombie: Bool
    /// When the process started, in clock ticks after boot; with the pid it names one process.
    var startTime: UInt64
    /// False while the process still runs the program it was forked from: the kernel's `PF_FORKNOEXEC`
    /// flag, set on fork and cleared by `execve` once the new address space is in place.
    var hasExecuted: Bool

    /// `PF_FORKNOEXEC` in `include/linux/sched.h` (0x40 since Linux 2.x).
    static let forkedNotExecuted: UInt64 = 0x40

    /// The status of `pid`, or nil when it is gone.
    init?(pid: pid_t) {
        guard let line = FileSystem.readSmallFile("/proc/\(pid)/stat", limit: 1024) else { return nil }
        self.init(statLine: line)
    }

    /// Parses a `/proc/<pid>/stat` line (proc(5): fields after the parenthesized command name).
    init?(statLine line: [UInt8]) {
        guard let close = line.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = line[(close + 1)...].split(separator: UInt8(ascii: " "))
        // fields[0] is the state (3rd field), [1] the parent (4th), [2] the group (5th), [6] the flags (9th),
        // [19] the start (22nd).
        guard fields.count > 19,
            let parent = pid_t(String(decoding: fields[1], as: UTF8.self)),
            let group = pid_t(String(decoding: fields[2], as: UTF8.self)),
            let flags = UInt64(String(decoding: fields[6], as: UTF8.self)),
            let start = UInt64(String(decoding: fields[19], as: UTF8.self))
        else { return nil }
        self.parent = parent
        self.group = group
        isZombie = fields[0].first == UInt8(ascii: "Z") || fields[0].first == UInt8(ascii: "X")
        startTime = start
        hasExecuted = flags & Self.forkedNotExecuted == 0
    }
}

/// Resident memory of an extension's process tree.
enum ProcessMemory {
    /// Resident bytes of `root` and its descendants (children of each process's main thread), each counted
    /// by `/proc/<pid>/statm`; nil while `root` has not exec'd yet, or when it is gone.
    ///
    /// A spawn (``ChildProcess``, like `posix_spawn`) returns once the child has let go of the parent's address
    /// space in `execve`, but the kernel switches the child to its new address space a moment later
    /// (`exec_mmap`: the child may still wait there for the parent's `mmap_lock`). Until then `/proc/<child>/statm` shows the *server's*
    /// memory: that is how a `dash` script was once sampled at 83 MiB and killed. So a root that has not
    /// exec'd is not sampled. A descendant is counted only while its pid still names the child that its
    /// parent listed (same parent, same start time before and after the read), never a reused pid.
    static func residentBytes(ofTreeAt root: pid_t) -> Int? {
        guard let status = ProcessStatus(pid: root), status.hasExecuted,
            var total = residentBytes(of: root)
        else { return nil }
        var pending = children(of: root).map { (pid: $0, parent: root) }
        var seen: Set<pid_t> = [root]
        while let (pid, parent) = pending.popLast(), seen.count < 4096 {
            guard seen.insert(pid).inserted, let before = ProcessStatus(pid: pid), before.parent == parent else {
                continue
            }
            let resident = residentBytes(of: pid)
            let kids = children(of: pid)
            guard let resident, let after = ProcessStatus(pid: pid), after.startTime == before.startTime,
                after.parent == parent
            else { continue }
            total += resident
            pending += kids.map { (pid: $0, parent: pid) }
        }
        return total
    }

    /// Resident bytes of one process (0 for a zombie), or nil when it is gone.
    private static func residentBytes(of pid: pid_t) -> Int? {
        guard let statm = FileSystem.readSmallFile("/proc/\(pid)/statm", limit: 256) else { return nil }
        let fields = statm.split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * System.pageSize
    }

    private static func children(of pid: pid_t) -> [pid_t] {
        guard let text = FileSystem.readSmallFile("/proc/\(pid)/task/\(pid)/children", limit: 65_536) else {
            return []
        }
        return text.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") })
            .compactMap { pid_t(String(decoding: $0, as: UTF8.self)) }
    }
}
