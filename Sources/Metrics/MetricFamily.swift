// APNs Sandbox — families: one metric name, its label names, and a child per set of label values.
import Synchronization
import Support

/// What the registry asks of a family at scrape time.
public protocol MetricFamily: Sendable {
    var name: String { get }
    func write(to writer: inout ExpositionWriter)
}

/// Children by label values, in the order they were first asked for. Looking a child up takes the
/// family's lock: resolve children once, off the hot path, and keep them.
final class Children<Child: Sendable>: Sendable {
    let labelNames: [String]
    private let storage = Locked<(byValues: [[String]: Child], order: [([String], Child)])>(([:], []))

    init(labelNames: [String]) {
        self.labelNames = labelNames
    }

    func child(_ values: [String], make: () -> Child) -> Child {
        precondition(values.count == labelNames.count, "label values do not match \(labelNames)")
        return storage.withLock { storage in
            if let existing = storage.byValues[values] { return existing }
            let created = make()
            storage.byValues[values] = created
            storage.order.append((values, created))
            return created
        }
    }

    var all: [(labels: [(name: String, value: String)], child: Child)] {
        storage.withLock { $0.order }.map { values, child in
            (zip(labelNames, values).map { (name: $0.0, value: $0.1) }, child)
        }
    }
}

/// A `counter` family (`…_total`).
public final class CounterFamily: MetricFamily {
    public let name: String
    let help: String
    /// A child that is still 0 is left out of the scrape (families with many pre-resolved children).
    let omitsZeros: Bool
    private let children: Children<Counter>

    init(name: String, help: String, labelNames: [String], omitsZeros: Bool) {
        self.name = name
        self.help = help
        self.omitsZeros = omitsZeros
        self.children = Children(labelNames: labelNames)
    }

    /// The counter of these label values (in the order of the family's label names).
    public func labels(_ values: String...) -> Counter { labels(values) }

    public func labels(_ values: [String]) -> Counter { children.child(values) { Counter() } }

    public func write(to writer: inout ExpositionWriter) {
        writer.family(name, type: .counter, help: help)
        for (labels, counter) in children.all where !(omitsZeros && counter.current == 0) {
            writer.sample(name, labels, Double(counter.current))
        }
    }
}

/// A `gauge` family whose children the code keeps up to date.
public final class GaugeFamily: MetricFamily {
    public let name: String
    let help: String
    private let children: Children<Gauge>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.children = Children(labelNames: labelNames)
    }

    public func labels(_ values: String...) -> Gauge { children.child(values) { Gauge() } }

    public func write(to writer: inout ExpositionWriter) {
        writer.family(name, type: .gauge, help: help)
        for (labels, gauge) in children.all { writer.sample(name, labels, Double(gauge.current)) }
    }
}

/// A family whose samples are read when it is scraped (file sizes, `/proc`, a count in memory).
public final class ScrapedFamily: MetricFamily {
    public let name: String
    let help: String
    let type: MetricType
    let labelNames: [String]
    let read: @Sendable () -> [(values: [String], value: Double)]

    init(
        name: String, help: String, type: MetricType, labelNames: [String],
        read: @escaping @Sendable () -> [(values: [String], value: Double)]
    ) {
        self.name = name
        self.help = help
        self.type = type
        self.labelNames = labelNames
        self.read = read
    }

    public func write(to writer: inout ExpositionWriter) {
        writer.family(name, type: type, help: help)
        for sample in read() {
            writer.sample(name, zip(labelNames, sample.values).map { (name: $0.0, value: $0.1) }, sample.value)
        }
    }
}

/// A `histogram` family (`…_bucket{le=…}`, `…_sum`, `…_count`).
public final class HistogramFamily: MetricFamily {
    public let name: String
    let help: String
    let bounds: [Double]
    /// A child without observations is left out of the scrape (families with many pre-resolved children).
    let omitsEmpty: Bool
    private let children: Children<Histogram>

    init(name: String, help: String, labelNames: [String], bounds: [Double], omitsEmpty: Bool = false) {
        self.name = name
        self.help = help
        self.bounds = bounds
        self.omitsEmpty = omitsEmpty
        self.children = Children(labelNames: labelNames)
    }

    public func labels(_ values: String...) -> Histogram { children.child(values) { Histogram(bounds: bounds) } }

    public func write(to writer: inout ExpositionWriter) {
        writer.family(name, type: .histogram, help: help)
        for (labels, histogram) in children.all {
            let (cumulative, sum) = histogram.snapshot()
            if omitsEmpty, (cumulative.last ?? 0) == 0 { continue }
            for (index, count) in cumulative.enumerated() {
                let le = index < bounds.count ? ExpositionWriter.format(bounds[index]) : "+Inf"
                writer.sample(name + "_bucket", labels + [(name: "le", value: le)], Double(count))
            }
            writer.sample(name + "_sum", labels, sum)
            writer.sample(name + "_count", labels, Double(cumulative.last ?? 0))
        }
    }
}
