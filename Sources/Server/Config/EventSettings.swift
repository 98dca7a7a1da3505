// APNs Sandbox — configuration of the event log, the SSE stream and webhooks.
import Webhooks

/// The event log and the live stream (`GET /api/v1/events`).
public struct EventSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    /// Keep at most this many events for `Last-Event-ID` resume (the oldest are pruned).
    public var maxEvents = 1_000_000
    /// Prune events older than this.
    public var maxAgeHours: ConfigDuration<InHours> = 24
    /// An SSE comment line is sent this often so that proxies keep idle streams open.
    public var heartbeatSeconds: ConfigDuration<InSeconds> = 15

    public init() {}

    enum Keys: String, CodingKey, CaseIterable {
        case maxEvents, maxAgeHours, heartbeatSeconds
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        maxEvents = try section(.maxEvents, \.maxEvents)
        maxAgeHours = try section(.maxAgeHours, \.maxAgeHours)
        heartbeatSeconds = try section(.heartbeatSeconds, \.heartbeatSeconds)
    }
}

/// Webhook delivery (Standard Webhooks) and the subscriptions configured in the file.
public struct WebhookConfiguration: Codable, Sendable, Equatable, StrictlyKeyed {
    /// Delays before each attempt in milliseconds; the first is the first attempt's (normally 0).
    public var retryScheduleMilliseconds: [ConfigDuration<InMilliseconds>]
    /// Random spread of each delay (0.1 = ±10 %).
    public var jitter: Double
    public var timeoutMilliseconds: ConfigDuration<InMilliseconds>
    public var maxConcurrentPerEndpoint: Int
    public var breakerFailureThreshold: Int
    public var breakerCooldownMilliseconds: ConfigDuration<InMilliseconds>
    /// Finished deliveries stay in the delivery log this long.
    public var deliveryRetentionDays: ConfigDuration<InDays>
    public var subscriptions: [Subscription]

    /// A subscription from the configuration file (re-applied at every start; its id is kept).
    public struct Subscription: Codable, Sendable, Equatable, StrictlyKeyed {
        public var id: String
        public var url: String
        /// Event type names (empty: all).
        public var events: [String]?
        public var devices: [String]?
        public var topics: [String]?
        /// `whsec_…`; generated (and kept in the store) when absent.
        public var secret: String?
        public var description: String?
        public var maxConcurrentDeliveries: Int?

        public init(id: String, url: String, events: [String]? = nil, secret: String? = nil) {
            self.id = id
            self.url = url
            self.events = events
            self.secret = secret
        }

        enum Keys: String, CodingKey, CaseIterable {
            case id, url, events, devices, topics, secret, description, maxConcurrentDeliveries
        }

        public init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Subscription(id: "", url: ""))
            id = try section.required(.id)
            url = try section.required(.url)
            events = try section(.events, \.events)
            devices = try section(.devices, \.devices)
            topics = try section(.topics, \.topics)
            secret = try section(.secret, \.secret)
            description = try section(.description, \.description)
            maxConcurrentDeliveries = try section(.maxConcurrentDeliveries, \.maxConcurrentDeliveries)
        }
    }

    /// The dispatcher's own defaults (``WebhookSettings``), in the file's units.
    public init() {
        let d = WebhookSettings()
        retryScheduleMilliseconds = d.retryScheduleMilliseconds.map { ConfigDuration($0) }
        jitter = d.jitter
        timeoutMilliseconds = ConfigDuration(d.timeoutMilliseconds)
        maxConcurrentPerEndpoint = d.maxConcurrentPerEndpoint
        breakerFailureThreshold = d.breakerFailureThreshold
        breakerCooldownMilliseconds = ConfigDuration(d.breakerCooldownMilliseconds)
        deliveryRetentionDays = ConfigDuration(milliseconds: d.deliveryRetentionMilliseconds)
        subscriptions = []
    }

    enum Keys: String, CodingKey, CaseIterable {
        case retryScheduleMilliseconds, jitter, timeoutMilliseconds, maxConcurrentPerEndpoint
        case breakerFailureThreshold, breakerCooldownMilliseconds, deliveryRetentionDays, subscriptions
    }

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        retryScheduleMilliseconds = try section(.retryScheduleMilliseconds, \.retryScheduleMilliseconds)
        jitter = try section(.jitter, \.jitter)
        timeoutMilliseconds = try section(.timeoutMilliseconds, \.timeoutMilliseconds)
        maxConcurrentPerEndpoint = try section(.maxConcurrentPerEndpoint, \.maxConcurrentPerEndpoint)
        breakerFailureThreshold = try section(.breakerFailureThreshold, \.breakerFailureThreshold)
        breakerCooldownMilliseconds = try section(.breakerCooldownMilliseconds, \.breakerCooldownMilliseconds)
        deliveryRetentionDays = try section(.deliveryRetentionDays, \.deliveryRetentionDays)
        subscriptions = try section(.subscriptions, \.subscriptions)
    }

    /// The dispatcher's settings.
    var settings: WebhookSettings {
        var settings = WebhookSettings()
        settings.retryScheduleMilliseconds = retryScheduleMilliseconds.map(\.milliseconds)
        settings.jitter = jitter
        settings.timeoutMilliseconds = timeoutMilliseconds.milliseconds
        settings.maxConcurrentPerEndpoint = maxConcurrentPerEndpoint
        settings.breakerFailureThreshold = breakerFailureThreshold
        settings.breakerCooldownMilliseconds = breakerCooldownMilliseconds.milliseconds
        settings.breakerMaxCooldownMilliseconds = max(breakerCooldownMilliseconds.milliseconds, settings.breakerMaxCooldownMilliseconds)
        settings.deliveryRetentionMilliseconds = deliveryRetentionDays.milliseconds
        return settings
    }

    /// Problems that make the settings unusable, for `SandboxConfiguration.validate()`.
    func problems() -> [String] {
        var problems: [String] = []
        if retryScheduleMilliseconds.isEmpty || retryScheduleMilliseconds.contains(where: { $0 < 0 }) {
            problems.append("webhooks.retryScheduleMilliseconds must list at least one delay, none negative")
        }
        if !(0...1).contains(jitter) { problems.append("webhooks.jitter must be in 0…1") }
        if timeoutMilliseconds < 1 { problems.append("webhooks.timeoutMilliseconds must be positive") }
        if maxConcurrentPerEndpoint < 1 { problems.append("webhooks.maxConcurrentPerEndpoint must be at least 1") }
        if breakerFailureThreshold < 1 { problems.append("webhooks.breakerFailureThreshold must be at least 1") }
        for subscription in subscriptions {
            if let message = WebhookSubscriptionRules.problem(
                url: subscription.url, events: subscription.events ?? [], secret: subscription.secret)
            {
                problems.append("webhooks.subscriptions[\(subscription.id)]: \(message)")
            }
        }
        return problems
    }
}
