// APNs Sandbox — one webhook subscription's live state in the dispatcher.
import Events
import Foundation
import Sandbox
import Support

/// Where a subscription's requests go; immutable, so it is used outside the lock.
struct WebhookTarget: Sendable {
    let subscriptionID: String
    let url: URL?
    let key: [UInt8]
}

/// One subscription's live state. A class, mutated in place under the dispatcher's lock (a struct in the
/// dictionary was copied out and back for every change, and its queue of deliveries with it).
final class WebhookEndpoint {
    /// Replaced when the subscription's secret is rotated (attempts already started keep the old one).
    var target: WebhookTarget
    let filter: EventFilter
    let capacity: Int
    var cursor: Int64
    var inFlight: Set<Int64> = []
    /// Attempts that ended whose results are not committed yet (still `pending` in the store).
    var recording: Set<Int64> = []
    var breaker = CircuitBreaker()
    /// Deliveries just fanned out, due now: attempted from memory without reading them back.
    private var ready = FIFOQueue<WebhookDelivery>()

    init(_ subscription: WebhookSubscription, cursor: Int64, defaultCapacity: Int) {
        target = WebhookTarget(
            subscriptionID: subscription.id, url: URL(string: subscription.url),
            key: WebhookSignature.key(ofSecret: subscription.secret) ?? [])
        filter = subscription.filter
        capacity = max(1, subscription.maxConcurrentDeliveries ?? defaultCapacity)
        self.cursor = cursor
    }

    var readyCount: Int { ready.count }

    func addReady(_ deliveries: [WebhookDelivery]) {
        ready.append(contentsOf: deliveries)
    }

    /// The oldest ready delivery.
    func takeReady() -> WebhookDelivery? {
        ready.popFirst()
    }

    /// Deliveries the store may still list as due that must not be picked again (the ready ones
    /// are only queried for once none is left).
    var busy: Set<Int64> { inFlight.union(recording) }
}
