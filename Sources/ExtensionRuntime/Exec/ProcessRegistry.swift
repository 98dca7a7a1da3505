// APNs Sandbox — every live exec extension process, known where it matters when the server dies.
import CProcess
import Glibc
import Synchronization
import Support

/// Keeps exec extensions' processes from outliving the server.
///
/// ### Overview
/// Three layers, each for what the one before cannot do:
/// 1. **PDEATHSIG** (``ChildProcess/spawn(executable:arguments:environment:directory:guardian:)``): the kernel
///    kills the direct child the moment its spawning thread exits, i.e. when the server dies.
/// 2. **The guardian** (``ProcessGuardian``): a small process forked from the server to which each child
///    reports its process group before exec. When the server dies, the guardian's pipe from it reaches
///    end-of-file and it SIGKILLs every group it still knows, so the extension's own children (a script's
///    `sleep`) die at once too. It pins each group with a pidfd and signals it by identity (Linux 6.9),
///    never by a number another group may have taken.
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

    private struct State {
        var ledger: Int32 = -1
        var freeSlots: [Int] = []
        var nextSlot = 0
        /// Registered processes.
        var live: Set<pid_t> = []
    }

    private let state = Locked(State())
    /// Where spawns register their groups (nil: no guardian).
    let guardian: ProcessGuardian?
    /// The ledger file, opened by ``openLedger()``.
    let ledgerPath: String

    /// - Parameters:
    ///   - ledgerPath: The ledger file (created and emptied by ``openLedger()``).
    ///   - guardian: The guardian to use (``ProcessGuardian/shared`` in the runtime; nil for none).
    init(ledgerPath: String, guardian: ProcessGuardian?) {
        self.guardian = guardian
        self.ledgerPath = ledgerPath
    }

    /// Creates (or empties) the ledger file and records into it from now on; its parent must exist. Before
    /// this, and when the file cannot be opened, processes are registered without a record. Does nothing
    /// once the ledger is open.
    func openLedger() {
        state.withLock { state in
            guard state.ledger < 0 else { return }
            state.ledger = open(ledgerPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
    }

    deinit {
        let ledger = state.withLock { $0.ledger }
        if ledger >= 0 { close(ledger) }
    }

    // MARK: Spawning

    /// The guardian's pipe for the next spawn (starting the guardian when needed), or -1.
    func guardianDescriptor() -> Int32 {
        guardian?.descriptor() ?? -1
    }

    /// Records a spawned process in the ledger (reading its start time now: it is our unreaped child, so the
    /// pid names it).
    func register(_ pid: pid_t, instance: String) -> Registration {
        let start = CProcess_start_time(pid)
        if start != 0 { guardian?.registered(pid, start: start) }
        let (fd, slot) = state.withLock { state -> (Int32, Int) in
            state.live.insert(pid)
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
        let fd = state.withLock { state -> Int32 in
            state.live.remove(registration.pid)
            return state.ledger
        }
        guardian?.forget(registration.pid)
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
}
