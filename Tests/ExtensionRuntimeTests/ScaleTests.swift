// APNs Sandbox — many hanging instances at once: all end on time, on a bounded number of threads.
import Foundation
import Sandbox
import Synchronization
import Testing

@testable import ExtensionRuntime

@Suite(.serialized) struct ScaleTests {
    /// Threads and resident memory of this process, from /proc/self/status.
    static func processStatus() -> (threads: Int, residentMB: Double) {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func value(_ key: String) -> Double {
            let line = text.split(separator: "\n").first { $0.hasPrefix(key + ":") } ?? ""
            return Double(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return (Int(value("Threads")), value("VmRSS") / 1024)
    }

    /// 10,000 concurrently hanging builtin instances with a 1 s budget and 200 ms grace all end
    /// (`original-timeout`), none early and all soon after budget + grace, without a thread per instance.
    @Test func tenThousandHangingInstancesEndOnTime() throws {
        try measure(count: 10_000, budget: 1000, grace: 200)
    }

    private func measure(count: Int, budget: Int, grace: Int) throws {
        let harness = try RuntimeHarness()
        let before = Self.processStatus()
        let push = TestPush(#"{"kind":"builtin","budgetMs":\#(budget),"graceMs":\#(grace),"steps":[{"step":"simulate","behavior":"hang"}]}"#)
        let peakThreads = Atomic<Int>(before.threads)
        let sampling = Atomic<Bool>(true)
        let sampler = Thread {
            while sampling.load(ordering: .relaxed) {
                let threads = Self.processStatus().threads
                if threads > peakThreads.load(ordering: .relaxed) { peakThreads.store(threads, ordering: .relaxed) }
                usleep(10_000)
            }
        }
        sampler.start()
        let started = DispatchTime.now().uptimeNanoseconds
        let runs = (0..<count).map { _ in harness.run(push) }
        let startMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        let peakRunning = harness.runtime.runningInstanceCount
        let residentDuring = Self.processStatus().residentMB
        var lateness: [Double] = []
        for run in runs {
            let result = try run.wait(seconds: 30)
            #expect(result.outcome == .originalTimeout)
            lateness.append(run.elapsedMilliseconds - Double(budget + grace))
        }
        sampling.store(false, ordering: .relaxed)
        lateness.sort()
        let p50 = lateness[lateness.count / 2]
        let p99 = lateness[lateness.count * 99 / 100]
        let after = Self.processStatus()
        print("""
            [scale] \(count) hanging builtin instances, budget \(budget) ms + grace \(grace) ms: started in \
            \(Int(startMilliseconds)) ms, \(peakRunning) running at once; lateness after budget+grace: \
            min \(String(format: "%.1f", lateness[0])) ms, p50 \(String(format: "%.1f", p50)) ms, \
            p99 \(String(format: "%.1f", p99)) ms, max \(String(format: "%.1f", lateness[lateness.count - 1])) ms; \
            threads \(before.threads) before, peak \(peakThreads.load(ordering: .relaxed)); \
            RSS \(Int(before.residentMB)) MB before, \(Int(residentDuring)) MB while running, \(Int(after.residentMB)) MB after
            """)
        #expect(lateness[0] >= -1, "an instance ended before budget + grace")
        // A correctness bound, not a speed target: instances end when due, not at some later timer or
        // at shutdown. The p99 ≤ 50 ms target is measured by scripts/bench-extensions (BENCHMARKS.md),
        // where no other suite competes for the two cores.
        #expect(p99 <= 1000, "p99 lateness \(p99) ms")
        // Other suites run in parallel and start threads too; one thread per instance would add thousands.
        #expect(peakThreads.load(ordering: .relaxed) - before.threads < 256, "threads grew with the instances")
        #expect(waitUntil { harness.runtime.runningInstanceCount == 0 })
    }
}
