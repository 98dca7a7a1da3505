// APNs Sandbox — the Store's retention and attachment sweeper, set up from the configuration.
import ExtensionRuntime
import Store

extension Retention.Settings {
    /// `storage.maxRecords`/`maxAgeDays`, `events.maxEvents`/`maxAgeHours` and `webhooks.deliveryRetentionDays`,
    /// in counts and milliseconds; a pass a minute.
    init(_ configuration: SandboxConfiguration) {
        self.init(
            maxRecords: configuration.storage.maxRecords,
            maxRecordAgeMilliseconds: configuration.storage.maxAgeDays.milliseconds,
            maxEvents: configuration.events.maxEvents,
            maxEventAgeMilliseconds: configuration.events.maxAgeHours.milliseconds,
            deliveryRetentionMilliseconds: configuration.webhooks.settings.deliveryRetentionMilliseconds)
    }
}

extension AttachmentSweeper.Layout {
    /// Where the extension runtime's attachment store puts a notification's files (``AttachmentFolders``).
    static let attachmentStore = AttachmentSweeper.Layout(
        folder: { apnsID, deviceToken in AttachmentFolders.folder(apnsID: apnsID, deviceToken: deviceToken) },
        apnsFolder: { apnsID in AttachmentFolders.apnsFolder(apnsID) })
}
