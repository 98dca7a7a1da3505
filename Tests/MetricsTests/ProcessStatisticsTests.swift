// APNs Sandbox — /proc/self as the process gauges read it.
import Metrics
import Testing

@Suite struct ProcessStatisticsTests {
    /// This test process has resident memory, threads, CPU time and open descriptors, and a missing file is 0 bytes.
    @Test func readsThisProcess() throws {
        #expect(try #require(ProcessStatistics.residentBytes) > 1_000_000)
        #expect(try #require(ProcessStatistics.threads) >= 1)
        #expect(try #require(ProcessStatistics.cpuSeconds) > 0)
        #expect(try #require(ProcessStatistics.openDescriptors) >= 3)
        #expect(ProcessStatistics.fileSize("/nonexistent/apns-sandbox") == 0)
        #expect(ProcessStatistics.fileSize("/proc/self/status") == 0)  // procfs reports no size
    }
}
