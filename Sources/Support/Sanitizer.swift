// APNs Sandbox — which sanitizer this build runs under.
import CLinuxSystem

/// Whether this build runs under a sanitizer (`swift build --sanitize=thread|address`). Swift code cannot tell;
/// a C function of `CLinuxSystem`, compiled with the same flag, can (`__has_feature`).
public enum Sanitizer {
    /// ThreadSanitizer: ``Locked`` tells it about each lock.
    public static let thread = CLinuxSystem_tsan_enabled() != 0
    /// AddressSanitizer.
    public static let address = CLinuxSystem_asan_enabled() != 0
}
