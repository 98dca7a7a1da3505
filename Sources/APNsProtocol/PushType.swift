// APNs Sandbox — the `apns-push-type` values and their topic and size rules.

/// A value of the `apns-push-type` header (reference §1.4).
public enum PushType: String, Sendable, CaseIterable {
    /// A visible notification: alert, sound or badge.
    case alert
    /// A silent background update; priority must be 5 (or 1).
    case background
    /// A watchOS complication update.
    case complication
    /// A WidgetKit controls reload.
    case controls
    /// A File Provider change notification.
    case fileprovider
    /// A Live Activity update; priority 5 or 10.
    case liveactivity
    /// A location query to a Location Push Service Extension; token auth only.
    case location
    /// An MDM wake-up; the topic comes from the MDM certificate.
    case mdm
    /// A Push to Talk notification.
    case pushtotalk
    /// A VoIP call (PushKit).
    case voip
    /// A WidgetKit widgets reload.
    case widgets

    /// What `apns-topic` must end with: the bundle ID plus this suffix; nil when the topic is used as is.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: nil
        case .complication: ".complication"
        case .controls: ".push-type.controls"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveactivity: ".push-type.liveactivity"
        case .location: ".location-query"
        case .pushtotalk: ".voip-ptt"
        case .voip: ".voip"
        case .widgets: ".push-type.widgets"
        }
    }

    /// The largest accepted payload in bytes: 5120 for VoIP, 4096 for everything else.
    public var maxPayloadBytes: Int {
        self == .voip ? 5120 : 4096
    }

    /// True when APNs accepts this type only on token-authenticated (JWT) connections.
    public var requiresTokenAuth: Bool {
        self == .location
    }
}
