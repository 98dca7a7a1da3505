// APNs Sandbox — naming and deprioritising the calling thread (Linux keeps both per thread).
import CLinuxSystem

/// The calling thread's kernel name and nice value, for threads the event loops must not compete with.
public enum CurrentThread {
    /// Names the calling thread as /proc, `top -H` and debuggers show it (at most 15 bytes are kept).
    public static func setName(_ name: String) {
        _ = CLinuxSystem_set_thread_name(name)
    }

    /// Sets the calling thread's nice value (higher yields the CPU to others, e.g. the event loops).
    /// - Returns: false if the kernel refused.
    @discardableResult
    public static func setNiceness(_ niceness: Int32) -> Bool {
        CLinuxSystem_set_thread_niceness(niceness) == 0
    }
}
