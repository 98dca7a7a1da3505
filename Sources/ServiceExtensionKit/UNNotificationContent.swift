// APNs Sandbox — ServiceExtensionKit: Apple's UNNotificationContent / UNMutableNotificationContent on Linux.

import Foundation

/// The content of a notification, as iOS builds it from the push payload (Apple's `UNNotificationContent`).
///
/// Get a changeable copy with `mutableCopy() as? UNMutableNotificationContent`, as in Apple's documentation.
///
/// `@unchecked Sendable`: every property is read and written under `lock`, so an instance may be touched from
/// several threads — the tutorial pattern is to fill `bestAttemptContent` on a download callback while
/// `serviceExtensionTimeWillExpire()` hands it to the content handler on another thread. Each property access is
/// atomic; a read of several properties is not a transaction (as on iOS).
open class UNNotificationContent: NSObject, NSCopying, NSMutableCopying, @unchecked Sendable {
    private let lock = NSLock()
    private var state: ContentState

    /// Empty content (Apple's `UNNotificationContent()`).
    public override init() {
        state = ContentState()
        super.init()
    }

    init(state: ContentState) {
        self.state = state
        super.init()
    }

    /// A snapshot of every property, taken under the lock.
    var snapshot: ContentState { lock.withLock { state } }

    func mutate(_ body: (inout ContentState) -> Void) {
        lock.withLock { body(&state) }
    }

    /// The alert title (`aps.alert.title`, localized).
    open var title: String { snapshot.title }
    /// The alert subtitle (`aps.alert.subtitle`).
    open var subtitle: String { snapshot.subtitle }
    /// The alert body (`aps.alert.body`).
    open var body: String { snapshot.body }
    /// The badge to set on the app icon (`aps.badge`); `nil` leaves the badge alone.
    open var badge: NSNumber? { snapshot.badge }
    /// The sound to play (`aps.sound`).
    open var sound: UNNotificationSound? { snapshot.sound }
    /// The whole payload, `aps` included, as on iOS.
    open var userInfo: [AnyHashable: Any] { snapshot.userInfo }
    /// Groups notifications (`aps.thread-id`).
    open var threadIdentifier: String { snapshot.threadIdentifier }
    /// The notification category (`aps.category`).
    open var categoryIdentifier: String { snapshot.categoryIdentifier }
    /// The window to bring forward when the notification is opened (`aps.target-content-id`).
    open var targetContentIdentifier: String? { snapshot.targetContentIdentifier }
    /// Files shown with the notification (images, audio, video).
    open var attachments: [UNNotificationAttachment] { snapshot.attachments }
    /// How urgently to present it (`aps.interruption-level`).
    open var interruptionLevel: UNNotificationInterruptionLevel { snapshot.interruptionLevel ?? .active }
    /// Ranking in the notification summary, 0…1 (`aps.relevance-score`).
    open var relevanceScore: Double { snapshot.relevanceScore ?? 0 }
    /// The score for filtering with Focus (`aps.filter-criteria`).
    open var filterCriteria: String? { snapshot.filterCriteria }
    /// Kept for source compatibility; not sent to the sandbox.
    open var launchImageName: String { snapshot.launchImageName }
    /// Kept for source compatibility (deprecated on iOS 15); not sent to the sandbox.
    open var summaryArgument: String { snapshot.summaryArgument }
    /// Kept for source compatibility (deprecated on iOS 15); not sent to the sandbox.
    open var summaryArgumentCount: Int { snapshot.summaryArgumentCount }

    /// An immutable copy.
    open func copy(with zone: NSZone? = nil) -> Any {
        UNNotificationContent(state: snapshot)
    }

    /// A `UNMutableNotificationContent` with the same values.
    open func mutableCopy(with zone: NSZone? = nil) -> Any {
        UNMutableNotificationContent(state: snapshot)
    }

    open override func copy() -> Any { copy(with: nil) }

    open override func mutableCopy() -> Any { mutableCopy(with: nil) }

    open override var description: String {
        let state = snapshot
        return "<\(Swift.type(of: self)): title: \(quoted(state.title)), subtitle: \(quoted(state.subtitle)), "
            + "body: \(quoted(state.body)), threadIdentifier: \(quoted(state.threadIdentifier)), "
            + "categoryIdentifier: \(quoted(state.categoryIdentifier)), badge: \(state.badge.map { "\($0)" } ?? "nil"), "
            + "sound: \(state.sound.map { "\($0)" } ?? "nil"), attachments: \(state.attachments), "
            + "userInfo: \(state.userInfo.count) keys>"
    }
}

/// Content that an extension changes and hands back (Apple's `UNMutableNotificationContent`).
///
/// `@unchecked Sendable`: inherits the per-property lock of ``UNNotificationContent``.
open class UNMutableNotificationContent: UNNotificationContent, @unchecked Sendable {
    public override init() { super.init() }

    override init(state: ContentState) { super.init(state: state) }

    open override var title: String {
        get { super.title }
        set { mutate { $0.title = newValue } }
    }
    open override var subtitle: String {
        get { super.subtitle }
        set { mutate { $0.subtitle = newValue } }
    }
    open override var body: String {
        get { super.body }
        set { mutate { $0.body = newValue } }
    }
    open override var badge: NSNumber? {
        get { super.badge }
        set { mutate { $0.badge = newValue } }
    }
    open override var sound: UNNotificationSound? {
        get { super.sound }
        set { mutate { $0.sound = newValue } }
    }
    open override var userInfo: [AnyHashable: Any] {
        get { super.userInfo }
        set { mutate { $0.userInfo = newValue } }
    }
    open override var threadIdentifier: String {
        get { super.threadIdentifier }
        set { mutate { $0.threadIdentifier = newValue } }
    }
    open override var categoryIdentifier: String {
        get { super.categoryIdentifier }
        set { mutate { $0.categoryIdentifier = newValue } }
    }
    open override var targetContentIdentifier: String? {
        get { super.targetContentIdentifier }
        set { mutate { $0.targetContentIdentifier = newValue } }
    }
    open override var attachments: [UNNotificationAttachment] {
        get { super.attachments }
        set { mutate { $0.attachments = newValue } }
    }
    open override var interruptionLevel: UNNotificationInterruptionLevel {
        get { super.interruptionLevel }
        set { mutate { $0.interruptionLevel = newValue } }
    }
    open override var relevanceScore: Double {
        get { super.relevanceScore }
        set { mutate { $0.relevanceScore = newValue } }
    }
    open override var filterCriteria: String? {
        get { super.filterCriteria }
        set { mutate { $0.filterCriteria = newValue } }
    }
    open override var launchImageName: String {
        get { super.launchImageName }
        set { mutate { $0.launchImageName = newValue } }
    }
    open override var summaryArgument: String {
        get { super.summaryArgument }
        set { mutate { $0.summaryArgument = newValue } }
    }
    open override var summaryArgumentCount: Int {
        get { super.summaryArgumentCount }
        set { mutate { $0.summaryArgumentCount = newValue } }
    }
}

/// Every property of a content object, copied as one value.
struct ContentState {
    var title = ""
    var subtitle = ""
    var body = ""
    var badge: NSNumber?
    var sound: UNNotificationSound?
    var userInfo: [AnyHashable: Any] = [:]
    var threadIdentifier = ""
    var categoryIdentifier = ""
    var targetContentIdentifier: String?
    var attachments: [UNNotificationAttachment] = []
    /// `nil` until the payload or the extension sets it (then it is sent back); reads as `.active`.
    var interruptionLevel: UNNotificationInterruptionLevel?
    /// `nil` until the payload or the extension sets it (then it is sent back); reads as 0.
    var relevanceScore: Double?
    var filterCriteria: String?
    var launchImageName = ""
    var summaryArgument = ""
    var summaryArgumentCount = 0
}

private func quoted(_ text: String) -> String { text.isEmpty ? "(empty)" : "\"\(text)\"" }
