// APNs Sandbox — the seam where a notification service extension runs (architecture.md, reference §4).

/// Runs an app's notification service extension for one push and reports what the device shows.
///
/// The delivery engine calls it only for pushes that qualify (§4.1): an alert push (not background) with
/// `mutable-content: 1`, alert text (a title, subtitle, body or loc key) and an app whose
/// `serviceExtensionJSON` is set. The record is in status `extension-running` when handed over, and that
/// status is committed: after a crash, the engine shows such a push's original content rather than calling
/// the runner for it again.
///
/// Contract: call `completion` exactly once, on any thread, within the app's budget plus grace (the
/// implementation enforces the 30 s budget and falls back to `original` itself). The engine also keeps a
/// watchdog (``DeliveryEngine/Configuration/extensionWatchdogMilliseconds``): without an answer by then it
/// shows `original` with outcome `original-timeout` and ignores a later answer.
public protocol ServiceExtensionRunner: Sendable {
    /// - Parameters:
    ///   - record: The notification, status `extension-running`.
    ///   - original: The content the device would show without the extension (localized); what to show on
    ///     timeout, crash, error or content without alert text.
    ///   - device: The device (locale, per-app keys). A device the repository does not know is passed as a
    ///     minimal record with the record's token and environment.
    ///   - app: The app, with its `serviceExtensionJSON`.
    ///   - completion: The outcome and the content to show.
    func run(
        _ record: NotificationRecord, original: DisplayedContent, device: DeviceRecord, app: AppRecord,
        completion: @escaping @Sendable (DisplayOutcome, DisplayedContent) -> Void)
}
