// APNs Sandbox — what /proc says about this process: resident memory, CPU time, descriptors, threads.
import Foundation
import Glibc

/// Reads `/proc/self` when asked (at scrape time); nil for what cannot be read.
public enum ProcessStatistics {
    /// Resident set size in bytes (`VmRSS` of `/proc/self/status`).
    public static var residentBytes: Double? { statusField("VmRSS:").map { $0 * 1024 } }

    /// Threads of the process (`Threads` of `/proc/self/status`).
    public static var threads: Double? { statusField("Threads:") }

    /// User plus system CPU time in seconds (`utime` + `stime` of `/proc/self/stat`).
    public static var cpuSeconds: Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": field 3 is the state; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system) / ticks : nil
    }

    /// Open file descriptors (entries of `/proc/self/fd`, less the one the listing itself holds).
    public static var openDescriptors: Double? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        return Double(max(0, entries.count - 1))
    }

    /// The size of a file in bytes, 0 when it does not exist.
    public static func fileSize(_ path: String) -> Double {
        var info = stat()
        return stat(path, &info) == 0 ? Double(info.st_size) : 0
    }

    private static func statusField(_ name: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Double($0) }
        }
        return nil
    }
}
