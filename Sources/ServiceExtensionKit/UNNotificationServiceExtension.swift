// APNs Sandbox — ServiceExtensionKit: Apple's UNNotificationServiceExtension (reference §4.2–§4.3).

import Foundation

/// The base class of a notification service extension (Apple's `UNNotificationServiceExtension`).
///
/// Subclass it exactly as on iOS and start it with ``ServiceExtensionHost/run(_:)``:
///
/// ```swift
/// class NotificationService: UNNotificationServiceExtension {
///     var contentHandler: ((UNNotificationContent) -> Void)?
///     var bestAttemptContent: UNMutableNotificationContent?
///
///     override func didReceive(_ request: UNNotificationRequest,
///                              withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
///         self.contentHandler = contentHandler
///         bestAttemptContent = (request.content.mutableCopy() as? UNMutableNotificationContent)
///         if let bestAttemptContent {
///             bestAttemptContent.title = "\(bestAttemptContent.title) [modified]"
///             contentHandler(bestAttemptContent)
///         }
///     }
///
///     override func serviceExtensionTimeWillExpire() {
///         if let contentHandler, let bestAttemptContent { contentHandler(bestAttemptContent) }
///     }
/// }
/// ```
///
/// The host makes one instance per notification, calls ``didReceive(_:withContentHandler:)`` on a background
/// thread and, when the sandbox says time is up, ``serviceExtensionTimeWillExpire()`` on another thread (as iOS
/// does). The first content handed to the handler is shown; later calls are ignored.
///
/// The content handler the host passes is `@Sendable` — it may be called from any thread. An override may spell
/// the parameter `@escaping (UNNotificationContent) -> Void` (Apple's spelling; in the Swift 6 language mode
/// that closure cannot be captured by `URLSession`'s `@Sendable` completion handlers, the same as with Apple's
/// SDK) or `@escaping @Sendable (UNNotificationContent) -> Void` (capturable; also accepted by Apple's SDK).
///
/// Not `Sendable`, like Apple's class: the host hands the instance to its two threads itself.
open class UNNotificationServiceExtension: NSObject {
    public override init() { super.init() }

    /// Called once with the notification; call `contentHandler` with the content to show within the budget
    /// (about 30 s). The default implementation does nothing, so the original is shown at the deadline.
    @preconcurrency
    open func didReceive(
        _ request: UNNotificationRequest,
        withContentHandler contentHandler: @escaping @Sendable (UNNotificationContent) -> Void
    ) {}

    /// Called on another thread when the budget is about to run out; call the content handler now with your
    /// best attempt, or the original is shown.
    open func serviceExtensionTimeWillExpire() {}
}
