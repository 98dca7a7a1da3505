// APNs Sandbox — the Store's retention and attachment sweeper, set up from the configuration.
import ExtensionRuntime
import Store

extension Retention.Settings {
    /// `storage.maxRecords`/`maxAgeDays`, `events.maxEvents`/`maxAgeHours` and `webhooks.deliveryRetentionDays`,
    /// in counts and milliseconds; a pass a minute.
    init(_ configuration: SandboxConfiguration) {
        self.init(
            maxRecords: configuration.storage.maxRecords,
            maxRecordAgeMilliseconds: Int64(configuration.storage.maxAgeDays * 86_400_000),
            maxEvents: configuration.events.maxEvents,
            maxEventAgeMilliseconds: Int64(configuration.events.maxAgeHours * 3_600_000),
            deliveryRetentionMilliseconds: configuration.webhooks.settings.deliveryRetentionMilliseconds)
    }
}

extension AttachmentSweeper.Layout {
    /// Where the extension runtime's attachment store puts a notification's files (``AttachmentFolders``).
    static let attachmentStore = AttachmentSweeper.Layout(
        folder: { apnsID, deviceToken in AttachmentFolders.folder(apnsID: apnsID, deviceToken: deviceToken) },
        apnsFolder: { apnsID in AttachmentFolders.apnsFolder(apnsID) })
}
