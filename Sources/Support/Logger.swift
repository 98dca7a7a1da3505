// APNs Sandbox — structured one-line logging.
import Foundation
import Glibc
import Synchronization

/// A value-type logger that writes one line per message: `time level message key=value …`.
///
/// Lines go to standard error through a single lock so concurrent threads never interleave.
/// Metadata values with spaces or quotes are quoted. Never log full device tokens or JWTs.
public struct Logger: Sendable {
    /// Severity, ordered from most to least verbose.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible, CaseIterable {
        case trace, debug, info, notice, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// Parses `trace|debug|info|notice|warning|error`.
        public init?(name: String) {
            switch name.lowercased() {
            case "trace": self = .trace
            case "debug": self = .debug
            case "info": self = .info
            case "notice": self = .notice
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }
    }

    public var label: String
    public var level: Level
    public var metadata: [(String, String)]
    private let sink: LogSink

    public init(label: String, level: Level = .info, sink: LogSink = .standardError) {
        self.label = label
        self.level = level
        self.metadata = []
        self.sink = sink
    }

    /// Returns a copy carrying one more metadata pair on every line.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata.append((key, value))
        return copy
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
        guard level >= self.level else { return }
        var line = Self.timestamp()
        line += " \(level) [\(label)] "
        line += Self.quoted(message())
        for (key, value) in self.metadata + metadata {
            line += " \(key)=\(Self.quoted(value))"
        }
        sink.write(line)
    }

    public func trace(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.trace, message(), metadata) }
    public func debug(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.debug, message(), metadata) }
    public func info(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.info, message(), metadata) }
    public func notice(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.notice, message(), metadata) }
    public func warning(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.warning, message(), metadata) }
    public func error(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) { log(.error, message(), metadata) }

    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        guard needsQuotes else { return value }
        var escaped = "\""
        for ch in value {
            switch ch {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.append(ch)
            }
        }
        return escaped + "\""
    }

    static func timestamp() -> String {
        let milliseconds = WallClock.milliseconds()
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }
}

/// Where log lines go: standard error, or an in-memory buffer for tests.
public final class LogSink: Sendable {
    private let isCapturing: Bool
    private let lines = Locked<[String]>([])
    private let lock = Locked(())

    private init(capturing: Bool) {
        self.isCapturing = capturing
    }

    public static let standardError = LogSink(capturing: false)

    /// A sink that keeps lines in memory (for tests).
    public static func capturing() -> LogSink { LogSink(capturing: true) }

    public var capturedLines: [String] { lines.withLock { $0 } }

    func write(_ line: String) {
        if isCapturing {
            lines.withLock { $0.append(line) }
            return
        }
        let bytes = Array((line + "\n").utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    // `!`: a log line is never empty (it ends with a newline).
                    let n = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }
}
