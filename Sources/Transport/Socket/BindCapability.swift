// APNs Sandbox — CAP_NET_BIND_SERVICE, raised from the permitted set only while the listeners bind (libcap).
import CCap
import Glibc

/// Binding a port below `net.ipv4.ip_unprivileged_port_start` (1024 unless lowered) needs CAP_NET_BIND_SERVICE in
/// the effective set. The container image gives the binary that capability as *permitted* only (`setcap
/// cap_net_bind_service=+p`, no effective bit): the kernel then starts the binary even where the capability cannot
/// be granted (`--cap-drop ALL`), where a file with the effective bit is refused (`execve` fails with EPERM). The
/// server raises it here while its listeners bind, and the binding thread gives it up for good afterwards
/// (capabilities are per thread: threads started before keep it permitted, never effective; libcap's psx, which
/// changes every thread, needs `pthread_create` wrapped at link time). Where it is not permitted
/// (no file capability, no-new-privileges, dropped from the bounding set) nothing changes: a port below 1024 binds
/// when the sysctl allows it. Root, whose effective set has it already, is left as it is.
enum BindCapability {
    static func whileBinding<T>(ports: [Int], _ body: () throws -> T) rethrows -> T {
        // Permitted and not effective: the file capability (root has it effective, and is left alone).
        guard let capabilities = ProcessCapabilities(), capabilities.isSet(CAP_NET_BIND_SERVICE, CAP_PERMITTED),
              !capabilities.isSet(CAP_NET_BIND_SERVICE, CAP_EFFECTIVE)
        else { return try body() }
        if ports.contains(where: { $0 > 0 && $0 < 1024 }) {
            capabilities.set(CAP_NET_BIND_SERVICE, CAP_EFFECTIVE, CAP_SET)
            _ = capabilities.apply()
        }
        defer {
            // Given up whether it was raised or not (no port below 1024): this thread never needs it again.
            capabilities.set(CAP_NET_BIND_SERVICE, CAP_EFFECTIVE, CAP_CLEAR)
            capabilities.set(CAP_NET_BIND_SERVICE, CAP_PERMITTED, CAP_CLEAR)
            _ = capabilities.apply()
        }
        return try body()
    }
}

/// The process's capability sets, read with `cap_get_proc` (libcap's `cap_t`, freed with this value); changes
/// apply to the process with ``apply()``.
final class ProcessCapabilities {
    private let handle: cap_t

    init?() {
        guard let handle = cap_get_proc() else { return nil }
        self.handle = handle
    }

    deinit { cap_free(UnsafeMutableRawPointer(handle)) }

    func isSet(_ capability: Int32, _ set: cap_flag_t) -> Bool {
        var value = CAP_CLEAR
        return cap_get_flag(handle, cap_value_t(capability), set, &value) == 0 && value == CAP_SET
    }

    func set(_ capability: Int32, _ set: cap_flag_t, _ value: cap_flag_value_t) {
        var capability = cap_value_t(capability)
        _ = cap_set_flag(handle, set, 1, &capability, value)
    }

    /// `cap_set_proc`: false when the kernel refuses (a capability that is not permitted).
    func apply() -> Bool { cap_set_proc(handle) == 0 }
}
