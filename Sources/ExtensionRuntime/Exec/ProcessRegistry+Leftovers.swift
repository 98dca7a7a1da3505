// APNs Sandbox — at start: kill what a previous run's extensions left, from its ledger.
import CProcess
import Glibc

extension ProcessRegistry {
    /// One record of a previous run's ledger.
    struct LedgerRecord: Equatable, Sendable {
        var pid: pid_t
        var start: UInt64
        var instance: String
    }

    /// What ``killLeftovers(ledgerPath:)`` found and did.
    struct LeftoverReport: Equatable, Sendable {
        /// Processes the previous run had not reaped (its records).
        var records = 0
        /// Of those, leaders still alive (their start time matched): their whole group was killed.
        var groupsKilled = 0
        /// Other processes of those instances (found by their `APNS_SANDBOX_INSTANCE`), killed one by one.
        var processesKilled = 0
    }

    /// Reads the ledger a previous run left at `ledgerPath` and kills what it lists. Call before this run
    /// spawns anything (`ExtensionRuntime.start()`), and before the delivery engine's recovery finalises the
    /// interrupted notifications.
    ///
    /// For each record whose leader still runs with the recorded start time (so its pid was not reused),
    /// the leader's whole process group is killed. A leader killed by PDEATHSIG is usually gone by now
    /// while its children live on (re-parented, in its group), so every process of the machine is also
    /// looked at: one whose environment has the record's `APNS_SANDBOX_INSTANCE=<id>` (ids are unique per
    /// run) is killed, and so is its group when that is the record's. Every kill goes through a pidfd opened
    /// *before* the checks, so it can only reach the process that was checked. The file is left for the
    /// caller to remove.
    /// - Returns: What was found and killed (all zero when there is no ledger).
    static func killLeftovers(ledgerPath: String) -> LeftoverReport {
        let records = readLedger(ledgerPath)
        var report = LeftoverReport(records: records.count)
        guard !records.isEmpty else { return report }
        for record in records where killGroup(of: record) { report.groupsKilled += 1 }
        report.processesKilled = killMarked(records)
        return report
    }

    /// The records of a ledger file (blank and malformed slots skipped).
    static func readLedger(_ path: String) -> [LedgerRecord] {
        guard let bytes = readWholeFile(path, limit: 64 << 20) else { return [] }
        var records: [LedgerRecord] = []
        var offset = 0
        while offset + recordSize <= bytes.count {
            let fields = bytes[offset..<(offset + recordSize - 1)].split(separator: UInt8(ascii: " "))
            offset += recordSize
            guard bytes[offset - 1] == 0x0A, fields.count == 3,
                let pid = pid_t(String(decoding: fields[0], as: UTF8.self)), pid > 1,
                let start = UInt64(String(decoding: fields[1], as: UTF8.self)), start > 0
            else { continue }
            records.append(LedgerRecord(pid: pid, start: start, instance: String(decoding: fields[2], as: UTF8.self)))
        }
        return records
    }

    /// Kills the record's group if its leader still runs (same start time); true when it did.
    private static func killGroup(of record: LedgerRecord) -> Bool {
        let pidfd = CProcess_pidfd_open(record.pid)
        guard pidfd >= 0 else {
            guard errno == ENOSYS, CProcess_start_time(record.pid) == record.start else { return false }
            // Before Linux 5.3: by number, checked a moment before.
            kill(-record.pid, SIGKILL)
            kill(record.pid, SIGKILL)
            return true
        }
        defer { close(pidfd) }
        // Read after opening: while the pidfd's process runs, /proc/<pid> is that process.
        guard CProcess_start_time(record.pid) == record.start else { return false }
        if CProcess_pidfd_signal(pidfd, SIGKILL, 1) != 0, errno == EINVAL {
            // Before Linux 6.9: by number, which the live leader holds.
            kill(-record.pid, SIGKILL)
        }
        CProcess_pidfd_signal(pidfd, SIGKILL, 0)
        return true
    }

    /// Kills every process whose environment names one of the records' instances; returns how many.
    private static func killMarked(_ records: [LedgerRecord]) -> Int {
        var groups: [[UInt8]: pid_t] = [:]
        for record in records { groups[Array("APNS_SANDBOX_INSTANCE=\(record.instance)".utf8)] = record.pid }
        let ownPID = getpid()
        var killed = 0
        for name in FileSystem.entries(of: "/proc") ?? [] {
            guard let pid = pid_t(name), pid > 1, pid != ownPID,
                markedGroup(of: pid, groups) != nil  // cheap first look, without a pidfd
            else { continue }
            let pidfd = CProcess_pidfd_open(pid)
            guard pidfd >= 0 else { continue }
            defer { close(pidfd) }
            // Checked again through the pidfd's process: environment, then its group, then still alive.
            guard let group = markedGroup(of: pid, groups), let status = ProcessStatus(pid: pid),
                CProcess_pidfd_signal(pidfd, 0, 0) == 0
            else { continue }
            if status.group == group {
                // Still in the instance's group, which this live member keeps from being reused.
                kill(-group, SIGKILL)
            }
            if CProcess_pidfd_signal(pidfd, SIGKILL, 0) == 0 { killed += 1 }
        }
        return killed
    }

    /// The recorded group of the instance named in `pid`'s environment, if any.
    private static func markedGroup(of pid: pid_t, _ groups: [[UInt8]: pid_t]) -> pid_t? {
        guard let environment = readWholeFile("/proc/\(pid)/environ", limit: 4 << 20) else { return nil }
        for entry in environment.split(separator: 0) where entry.starts(with: marker) {
            if let group = groups[Array(entry)] { return group }
        }
        return nil
    }

    private static let marker = Array("APNS_SANDBOX_INSTANCE=".utf8)

    /// The whole file (at most `limit` bytes), or nil when it cannot be read.
    private static func readWholeFile(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}
