// APNs Sandbox — every live exec extension process, known where it matters when the server dies.
import CProcess
import Glibc
import Synchronization

/// Keeps exec extensions' processes from outliving the server.
///
/// ### Overview
/// Three layers, each for what the one before cannot do:
/// 1. **PDEATHSIG** (``ChildProcess/spawn(executable:arguments:environment:directory:guardian:)``): the kernel
///    kills the direct child the moment its spawning thread exits, i.e. when the server dies.
/// 2. **The guardian** (``guardianDescriptor()``): a small process forked from the server
///    (`CProcess_guardian_start`) to which each child reports its process group before exec. When the
///    server dies, the guardian's pipe from it reaches end-of-file and it SIGKILLs every group it still
///    knows, so the extension's own children (a script's `sleep`) die at once too. It pins each group with
///    a pidfd and signals it by identity (Linux 6.9), never by a number another group may have taken.
/// 3. **The ledger** (a file in the data directory): a 64-byte record per live process (pid, start time,
///    instance id), written after the spawn and cleared once it is reaped. The next start reads it
///    (``killLeftovers(ledgerPath:)``) and kills what a previous run left, in case the guardian was killed
///    too (`kill -9` of both, the OOM killer).
///
/// ### Durability
/// Records are written with `pwrite` and never synced: they only need to outlive the server's process, and
/// a process killed with SIGKILL leaves its writes in the page cache. When the machine stops, the
/// extension processes stop with it. A record is cleared by overwriting its slot with spaces, so a run of
/// thousands of instances creates no files.
///
/// Thread-safe; a registration is given back exactly once (``ProcessReactor`` does it on reaping).
final class ProcessRegistry: Sendable {
    /// A live process as registered: its pid and its ledger slot (nil when the record could not be written).
    struct Registration: Sendable, Equatable {
        let pid: pid_t
        let slot: Int?
    }

    /// Size of one ledger record: `<pid> <start time> <instance id>`, space-padded, ending in a newline.
    static let recordSize = 64

    private struct Guardian {
        var pid: pid_t
        var descriptor: Int32
    }

    private struct State {
        var ledger: Int32 = -1
        var freeSlots: [Int] = []
        var nextSlot = 0
        /// Registered processes by pid, with what a restarted guardian must be told.
        var live: [pid_t: (start: UInt64, instance: String)] = [:]
        var guardian: Guardian?
        /// Pipes of guardians that died: kept open until the end, since a spawn on another thread may still
        /// be handing one to its child (a reused descriptor number would get the child's message).
        var retired: [Int32] = []
        /// The guardian could not be started: no second try (the other two layers still hold).
        var guardianFailed = false
    }

    private let ledgerPath: String
    private let usesGuardian: Bool
    private let state = Mutex(State())

    /// - Parameters:
    ///   - ledgerPath: The ledger file (created; its parent must exist).
    ///   - usesGuardian: Start a guardian on the first spawn (off in tests that count processes).
    init(ledgerPath: String, usesGuardian: Bool = true) {
        self.ledgerPath = ledgerPath
        self.usesGuardian = usesGuardian
        let fd = open(ledgerPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        state.withLock { $0.ledger = fd }
    }

    deinit {
        let (ledger, guardian, retired) = state.withLock { ($0.ledger, $0.guardian, $0.retired) }
        if ledger >= 0 { close(ledger) }
        for fd in retired { close(fd) }
        if let guardian { Self.stop(guardian) }
    }

    // MARK: Spawning

    /// The guardian's pipe for the next spawn, starting (or restarting) the guardian when needed; -1 when
    /// there is none.
    func guardianDescriptor() -> Int32 {
        guard usesGuardian else { return -1 }
        return state.withLock { state -> Int32 in
            if let guardian = state.guardian {
                var status: Int32 = 0
                guard waitpid(guardian.pid, &status, WNOHANG) == guardian.pid else { return guardian.descriptor }
                // It was killed: a new one is told about every process still alive.
                state.retired.append(guardian.descriptor)
                state.guardian = nil
            }
            guard !state.guardianFailed else { return -1 }
            var descriptor: Int32 = -1
            let pid = CProcess_guardian_start(&descriptor)
            guard pid > 0 else {
                state.guardianFailed = true
                return -1
            }
            state.guardian = Guardian(pid: pid, descriptor: descriptor)
            for (pid, entry) in state.live { CProcess_guardian_add(descriptor, pid, entry.start) }
            return descriptor
        }
    }

    /// The guardian's pid, if one runs (for tests).
    var guardianPID: pid_t? { state.withLock { $0.guardian?.pid } }

    /// Records a spawned process in the ledger (reading its start time now: it is our unreaped child, so the
    /// pid names it).
    func register(_ pid: pid_t, instance: String) -> Registration {
        let start = CProcess_start_time(pid)
        let (fd, slot) = state.withLock { state -> (Int32, Int) in
            state.live[pid] = (start, instance)
            let slot = state.freeSlots.popLast() ?? state.nextSlot
            if slot == state.nextSlot { state.nextSlot += 1 }
            return (state.ledger, slot)
        }
        guard fd >= 0, start != 0, write(Self.record(pid: pid, start: start, instance: instance), slot: slot, to: fd)
        else {
            state.withLock { $0.freeSlots.append(slot) }
            return Registration(pid: pid, slot: nil)
        }
        return Registration(pid: pid, slot: slot)
    }

    /// The process was reaped and its group killed: clears its record and tells the guardian.
    func unregister(_ registration: Registration) {
        let (fd, guardian) = state.withLock { state -> (Int32, Int32) in
            state.live[registration.pid] = nil
            return (state.ledger, state.guardian?.descriptor ?? -1)
        }
        if guardian >= 0 { CProcess_guardian_forget(guardian, registration.pid) }
        guard let slot = registration.slot else { return }
        if fd >= 0 { _ = write(Self.blankRecord, slot: slot, to: fd) }
        state.withLock { $0.freeSlots.append(slot) }
    }

    /// Processes registered and not yet given back.
    var liveCount: Int { state.withLock { $0.live.count } }

    private static let blankRecord = [UInt8](repeating: UInt8(ascii: " "), count: recordSize - 1) + [0x0A]

    static func record(pid: pid_t, start: UInt64, instance: String) -> [UInt8] {
        var bytes = Array("\(pid) \(start) \(instance)".utf8.prefix(recordSize - 1))
        bytes += [UInt8](repeating: UInt8(ascii: " "), count: recordSize - 1 - bytes.count)
        return bytes + [0x0A]
    }

    private func write(_ record: [UInt8], slot: Int, to fd: Int32) -> Bool {
        record.withUnsafeBytes { bytes in
            pwrite(fd, bytes.baseAddress, bytes.count, off_t(slot * Self.recordSize)) == bytes.count
        }
    }

    private static func stop(_ guardian: Guardian) {
        // End of file: it kills what it still knows (nothing, once every process was reaped) and exits.
        close(guardian.descriptor)
        var status: Int32 = 0
        while waitpid(guardian.pid, &status, 0) < 0, errno == EINTR {}
    }
}
