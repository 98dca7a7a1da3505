// APNs Sandbox — the content a device shows for a push, before any service extension (§3.1, §3.2, §3.6, §5).
import APNsProtocol

/// Builds ``DisplayedContent`` from a record's payload, localized for the device.
///
/// - Title, subtitle and body: a `*-loc-key` wins over the plain text when both are present (what most
///   client libraries assume; Apple does not say), resolved by ``AlertLocalizer`` with its `*-loc-args`.
///   The ActivityKit form `"title": {"loc-key": …, "loc-args": […]}` is localized the same way.
///   `*-loc-args` without a `*-loc-key` have no effect.
/// - `badge`, `sound` (a string, or the `name` of the critical-alert dictionary), `thread-id`, `category`,
///   `interruption-level`: as `Payload` reads them. `target-content-id` (string) and `relevance-score` (number)
///   from the `aps` object; a value of another JSON type counts as absent.
/// - `userInfoJSON`: the payload's members beside `aps`, values exactly as received (`{}` when none).
enum DisplayedContentBuilder {
    static func content(
        for record: NotificationRecord, payload: Payload?, locale: String, strings: [String: [String: String]]
    ) -> DisplayedContent {
        let document = PayloadDocument(parsing: record.payload)
        let aps = document?.aps
        let alert = aps?["alert"]
        let localizer = AlertLocalizer(strings: strings)

        func text(_ field: String, keyField: String, argsField: String, plain: String?) -> String? {
            if let key = alert?[keyField]?.string {
                return localizer.localize(key: key, arguments: alert?[argsField]?.texts ?? [], locale: locale)
            }
            if let object = alert?[field], let key = object["loc-key"]?.string {
                return localizer.localize(key: key, arguments: object["loc-args"]?.texts ?? [], locale: locale)
            }
            return plain
        }

        let plainBody = payload?.alertBody ?? alert?.string ?? alert?["body"]?.string
        var content = DisplayedContent(
            title: text("title", keyField: "title-loc-key", argsField: "title-loc-args",
                        plain: payload?.alertTitle ?? alert?["title"]?.string),
            subtitle: text("subtitle", keyField: "subtitle-loc-key", argsField: "subtitle-loc-args",
                           plain: payload?.alertSubtitle ?? alert?["subtitle"]?.string),
            body: text("body", keyField: "loc-key", argsField: "loc-args", plain: plainBody))
        content.badge = payload?.badge
        content.sound = payload?.sound
        content.threadID = payload?.threadID
        content.category = payload?.category
        content.interruptionLevel = payload?.interruptionLevel
        content.targetContentID = aps?["target-content-id"]?.string
        content.relevanceScore = aps?["relevance-score"]?.double.flatMap { $0.isFinite ? $0 : nil }
        content.userInfoJSON = document?.userInfoJSON
        return content
    }

    /// True when the content has alert text (a title, subtitle or body that is not empty).
    static func hasAlertText(_ content: DisplayedContent) -> Bool {
        [content.title, content.subtitle, content.body].contains { !($0 ?? "").isEmpty }
    }
}
