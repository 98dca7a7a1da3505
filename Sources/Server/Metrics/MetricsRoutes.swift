// APNs Sandbox — `GET /metrics`: every family in Prometheus' text format.
import HTTP
import Metrics

/// `GET /metrics` (docs/metrics.md). On the admin side like `/api/v1` (docs/security.md): a scraper sends the
/// admin token as a bearer token or HTTP Basic password when one is required. The scrape runs on a worker:
/// some families are read then from the stores (queue depth, the webhook retry backlog) and from `/proc`.
enum MetricsRoutes {
    static func register(on router: inout Router, registry: MetricsRegistry) {
        router.get("/metrics") { _, _ in
            .blocking {
                HTTPResponse(
                    status: 200, headers: ["content-type": ExpositionWriter.contentType],
                    body: Array(registry.exposition().utf8))
            }
        }
    }
}
