// APNs Sandbox — ServiceExtensionKit: Apple's UNNotificationRequest and triggers.

import Foundation

/// A notification request: its identifier, content and trigger (Apple's `UNNotificationRequest`).
///
/// For a push, `identifier` is the `apns-collapse-id` (or the `apns-id`) and `trigger` is a
/// ``UNPushNotificationTrigger``, as on iOS.
///
/// `@unchecked Sendable`: immutable; the content is an immutable copy.
open class UNNotificationRequest: NSObject, @unchecked Sendable {
    /// The request's identifier; an extension cannot change it.
    open var identifier: String { storedIdentifier }
    /// The content as delivered (immutable; use `mutableCopy()` to change it).
    open var content: UNNotificationContent { storedContent }
    /// What caused the notification: a ``UNPushNotificationTrigger`` for pushes.
    open var trigger: UNNotificationTrigger? { storedTrigger }

    private let storedIdentifier: String
    private let storedContent: UNNotificationContent
    private let storedTrigger: UNNotificationTrigger?

    /// A request with a copy of `content` (Apple's `init(identifier:content:trigger:)`).
    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {
        storedIdentifier = identifier
        storedContent = UNNotificationContent(state: content.snapshot)
        storedTrigger = trigger
        super.init()
    }

    open override var description: String {
        "<UNNotificationRequest: identifier: \(identifier), content: \(content), trigger: \(trigger.map { "\($0)" } ?? "nil")>"
    }
}

/// Why a notification was delivered (Apple's `UNNotificationTrigger`).
///
/// `@unchecked Sendable`: immutable (an `NSObject` subclass cannot be checked).
open class UNNotificationTrigger: NSObject, @unchecked Sendable {
    /// Whether the trigger fires again.
    open var repeats: Bool { false }

    override init() { super.init() }
}

/// The trigger of a remote (push) notification (Apple's `UNPushNotificationTrigger`).
///
/// `@unchecked Sendable`: immutable.
open class UNPushNotificationTrigger: UNNotificationTrigger, @unchecked Sendable {
    override init() { super.init() }

    open override var description: String { "<UNPushNotificationTrigger: repeats: NO>" }
}
