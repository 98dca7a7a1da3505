// APNs Sandbox — the registry's families and their text format.
import Metrics
import Testing

@Suite struct MetricsRegistryTests {
    /// A labelled counter writes HELP, TYPE and one line per child, in first-use order.
    @Test func countersWriteHelpTypeAndSamples() {
        let registry = MetricsRegistry()
        let family = registry.counter("demo_requests_total", help: "Requests.", labels: ["code"])
        family.labels("200").increment(by: 3)
        family.labels("404").increment()
        #expect(registry.exposition() == """
            # HELP demo_requests_total Requests.
            # TYPE demo_requests_total counter
            demo_requests_total{code="200"} 3
            demo_requests_total{code="404"} 1

            """)
    }

    /// A family that omits zeros leaves children at 0 out; a gauge goes up and down.
    @Test func omittedZerosAndGauges() {
        let registry = MetricsRegistry()
        let family = registry.counter("demo_total", help: "Demo.", labels: ["kind"], omitsZeros: true)
        _ = family.labels("never")
        family.labels("once").increment()
        let gauge = registry.gauge("demo_open", help: "Open.").labels()
        gauge.increment(by: 5)
        gauge.decrement(by: 2)
        let text = registry.exposition()
        #expect(!text.contains("never"))
        #expect(text.contains("demo_total{kind=\"once\"} 1\n"))
        #expect(text.contains("demo_open 3\n"))
    }

    /// Label values escape backslash, quote and newline; HELP escapes backslash and newline.
    @Test func escapesLabelValuesAndHelp() {
        let registry = MetricsRegistry()
        registry.counter("demo_escaped_total", help: "A \\ and\na line.", labels: ["value"])
            .labels("a\"b\\c\nd").increment()
        let text = registry.exposition()
        #expect(text.contains("# HELP demo_escaped_total A \\\\ and\\na line.\n"))
        #expect(text.contains(#"demo_escaped_total{value="a\"b\\c\nd"} 1"#))
    }

    /// A histogram writes cumulative buckets with `+Inf`, then `_sum` and `_count`.
    @Test func histogramsWriteCumulativeBuckets() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("demo_seconds", help: "Durations.", bounds: [0.1, 1]).labels()
        histogram.observe(0.05)
        histogram.observe(0.5)
        histogram.observe(7)
        #expect(registry.exposition() == """
            # HELP demo_seconds Durations.
            # TYPE demo_seconds histogram
            demo_seconds_bucket{le="0.1"} 1
            demo_seconds_bucket{le="1"} 2
            demo_seconds_bucket{le="+Inf"} 3
            demo_seconds_sum 7.55
            demo_seconds_count 3

            """)
    }

    /// A scraped value that cannot be read leaves its sample out (HELP and TYPE stay): never a made-up 0.
    @Test func unreadableScrapedValuesAreLeftOut() {
        let registry = MetricsRegistry()
        registry.scraped("demo_cpu_seconds_total", type: .counter, help: "CPU.") { nil }
        registry.scraped("demo_threads", help: "Threads.") { 4 }
        #expect(registry.exposition() == """
            # HELP demo_cpu_seconds_total CPU.
            # TYPE demo_cpu_seconds_total counter
            # HELP demo_threads Threads.
            # TYPE demo_threads gauge
            demo_threads 4

            """)
    }

    /// A histogram family that omits empty children writes only those with an observation.
    @Test func emptyHistogramsCanBeLeftOut() {
        let registry = MetricsRegistry()
        let family = registry.histogram("demo_run_seconds", help: "Runs.", labels: ["kind"], bounds: [1], omitsEmpty: true)
        _ = family.labels("never")
        family.labels("once").observe(0.5)
        let text = registry.exposition()
        #expect(!text.contains("never"))
        #expect(text.contains("demo_run_seconds_count{kind=\"once\"} 1\n"), "\(text)")
    }

    /// Numbers: whole values as integers, infinities and NaN as Prometheus spells them.
    @Test func formatsNumbers() {
        #expect(ExpositionWriter.format(42) == "42")
        #expect(ExpositionWriter.format(0.25) == "0.25")
        #expect(ExpositionWriter.format(.infinity) == "+Inf")
        #expect(ExpositionWriter.format(-.infinity) == "-Inf")
        #expect(ExpositionWriter.format(.nan) == "NaN")
    }

    /// Counters updated from many threads at once lose no increment.
    @Test func concurrentIncrementsAllCount() async {
        let counter = MetricsRegistry().counter("demo_concurrent_total", help: "Demo.").labels()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<10_000 { counter.increment() } } }
        }
        #expect(counter.current == 80_000)
    }
}
