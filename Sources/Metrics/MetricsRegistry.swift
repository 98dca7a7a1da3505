// APNs Sandbox — the families a process exposes, and their scrape.
import Synchronization
import Support

/// Every family of the process, in registration order; ``exposition()`` writes them in the text format.
///
/// Families are made by the registry (`counter`, `gauge`, `histogram`, `scraped`) and registered once,
/// when the server is built; their children are resolved then or on a cold path and kept by the code that
/// updates them. A name registered twice is a bug (precondition).
public final class MetricsRegistry: Sendable {
    private let families = Locked<[any MetricFamily]>([])

    public init() {}

    public func counter(
        _ name: String, help: String, labels: [String] = [], omitsZeros: Bool = false
    ) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labelNames: labels, omitsZeros: omitsZeros))
    }

    public func gauge(_ name: String, help: String, labels: [String] = []) -> GaugeFamily {
        register(GaugeFamily(name: name, help: help, labelNames: labels))
    }

    public func histogram(
        _ name: String, help: String, labels: [String] = [], bounds: [Double] = Histogram.secondsBounds,
        omitsEmpty: Bool = false
    ) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, labelNames: labels, bounds: bounds, omitsEmpty: omitsEmpty))
    }

    /// A family read at scrape time by `read` (on the scraping thread: it may read files, not wait long).
    @discardableResult
    public func scraped(
        _ name: String, type: MetricType = .gauge, help: String, labels: [String] = [],
        read: @escaping @Sendable () -> [(values: [String], value: Double)]
    ) -> ScrapedFamily {
        register(ScrapedFamily(name: name, help: help, type: type, labelNames: labels, read: read))
    }

    /// A scraped family with one sample and no labels; no sample at all when `value` is nil (it could not be
    /// read: a made-up 0 would look like a counter reset or an empty queue).
    @discardableResult
    public func scraped(
        _ name: String, type: MetricType = .gauge, help: String, value: @escaping @Sendable () -> Double?
    ) -> ScrapedFamily {
        scraped(name, type: type, help: help) { value().map { [(values: [], value: $0)] } ?? [] }
    }

    private func register<Family: MetricFamily>(_ family: Family) -> Family {
        families.withLock { families in
            precondition(!families.contains { $0.name == family.name }, "metric \(family.name) registered twice")
            families.append(family)
        }
        return family
    }

    /// The text format 0.0.4 of every family (``ExpositionWriter/contentType``).
    public func exposition() -> String {
        var writer = ExpositionWriter()
        for family in families.withLock({ $0 }) { family.write(to: &writer) }
        return writer.text
    }
}
