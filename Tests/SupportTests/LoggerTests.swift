// APNs Sandbox — structured log lines.
import Support
import Testing

@Suite struct LoggerTests {
    /// A line carries time, level, label, message and key=value metadata, quoting where needed.
    @Test func writesOneStructuredLine() throws {
        let sink = LogSink.capturing()
        let logger = Logger(label: "test", level: .info, sink: sink).with("conn.id", "7")
        logger.info("push accepted", [("apns.id", "abc"), ("note", "two words")])
        let line = try #require(sink.capturedLines.first)
        #expect(line.contains(" info [test] \"push accepted\" conn.id=7 apns.id=abc note=\"two words\""))
        #expect(line.hasPrefix("20"))
        #expect(line.contains("Z info"))
    }

    /// Messages below the logger's level are dropped.
    @Test func dropsMessagesBelowLevel() {
        let sink = LogSink.capturing()
        let logger = Logger(label: "test", level: .warning, sink: sink)
        logger.info("hidden")
        logger.debug("hidden")
        logger.error("shown")
        #expect(sink.capturedLines.count == 1)
        #expect(sink.capturedLines.first?.contains("error [test] shown") == true)
    }

    /// Newlines and quotes in values cannot break the one-line format.
    @Test func escapesNewlinesAndQuotes() throws {
        let sink = LogSink.capturing()
        Logger(label: "t", sink: sink).warning("a\nb", [("k", "say \"hi\"")])
        let line = try #require(sink.capturedLines.first)
        #expect(!line.contains("\n"))
        #expect(line.contains(#""a\nb""#))
        #expect(line.contains(#"k="say \"hi\"""#))
    }

    /// Level names parse case-insensitively; unknown names are rejected.
    @Test func parsesLevelNames() {
        #expect(Logger.Level(name: "DEBUG") == .debug)
        #expect(Logger.Level(name: "warn") == .warning)
        #expect(Logger.Level(name: "loud") == nil)
    }
}
