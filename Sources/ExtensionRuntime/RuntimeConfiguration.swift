// APNs Sandbox — settings of the extension runtime as a whole (per-app settings are ExtensionConfiguration).

/// Settings shared by every extension instance.
///
/// Directories under ``dataDirectory``:
/// - `attachments/<apnsId>/<deviceToken>/<identifier>.<ext>`: accepted attachments (``Attachment/path`` is relative to
///   `attachments/`);
/// - `app-groups/<deviceToken>/<bundleId>/`: the app-group container, shared by every instance of that app
///   on that device and kept between notifications;
/// - `instances/<instanceId>/`: each instance's temporary directory (the exec working directory), emptied
///   when the instance ends and kept in `instances/.free/` for a later instance (``InstanceDirectories``).
///   Left-overs from an earlier run are removed when the runtime starts;
/// - `instances/.processes`: the ledger of live exec processes (``ProcessRegistry``), read and then removed
///   at the next start.
public struct RuntimeConfiguration: Sendable {
    public var dataDirectory: String
    /// Budget when the app's configuration sets none (iOS: about 30 s).
    public var defaultBudgetMilliseconds: Int64 = 30_000
    /// Grace after `timeWillExpire` when the app's configuration sets none (undocumented on iOS).
    public var defaultGraceMilliseconds: Int64 = 1_000
    /// Honour the per-push `apns-sandbox-extension-budget-ms` request header (for tests).
    public var allowBudgetHeader = false
    /// Instances running at once; more wait (in order) for a free slot, their budget not yet started.
    public var maxConcurrentInstances = 10_000
    /// Serial dispatch queues that run instance work (builtin steps, process events, attachment moves):
    /// the runtime never uses more threads than this plus the launchers, the clock's, the process
    /// reactor's and its HTTP client's own.
    public var workerCount = max(2, min(8, System.processorCount))
    /// Queues that start exec extensions' processes (a spawn blocks its thread until the child has exec'd),
    /// each with two instances at most waiting on it; further exec instances wait before `didReceive`, their
    /// budget not yet started.
    public var launcherCount = max(1, min(4, System.processorCount))
    /// Fork a guardian process on the first exec spawn (one per process, shared by its runtimes), which kills
    /// extensions' process groups the moment the server dies (``ProcessGuardian``). Off, only the direct
    /// children die at once (PDEATHSIG), and their own children at the next start. Its cost: one single-threaded process whose memory is the server's at the
    /// fork, shared copy-on-write (measured: RSS 12 MiB, PSS 6 MiB, 2 MiB of it private after 1,500 exec
    /// instances).
    public var usesProcessGuardian = true
    /// How often exec process groups are checked for exit and sampled for memory.
    public var processSampleIntervalMilliseconds = 20
    /// After an exec extension's first content: how long it may keep running (its later output is noted)
    /// before its process group is killed.
    public var settleMilliseconds = 100
    /// stderr kept in the timeline per exec instance.
    public var stderrCaptureBytes = 64 * 1024
    /// Longest stdout line an exec extension may write.
    public var maxMessageBytes = 1 << 20
    /// Largest webhook response body.
    public var maxWebhookResponseBytes = 1 << 20
    /// A PEM file of the CAs that `https://` media and webhook servers are verified against; nil: the
    /// system's store.
    public var caFile: String?
    /// The programs exec extensions may start; an app whose extension names another one shows the
    /// original (`original-error`, with the reason in the timeline).
    public var execPolicy = ExecPolicy.unrestricted

    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The per-push header that shortens (or lengthens) the budget when ``allowBudgetHeader`` is on.
    public static let budgetHeader = "apns-sandbox-extension-budget-ms"
}
