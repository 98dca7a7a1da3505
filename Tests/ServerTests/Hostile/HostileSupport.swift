// APNs Sandbox — hostile-peer tests: the real binary as a child process, its memory and CPU, the attackers.
import Crypto
import Foundation
import Glibc
import Testing

/// `apns-sandbox serve` started for one hostile-peer test, so its RSS and CPU time can be read from /proc.
///
/// The configuration has the test team's key and app, `streamsBeforeAuthentication` 0 unless given,
/// `storage.synchronous` `normal`, and the `limits` the test sets (the rest are the defaults).
final class HostileServer: @unchecked Sendable {
    let process: ChildProcess
    let port: Int
    let directory: String
    let configPath: String
    /// A provider token of the configured key (from `apns-sandbox token`).
    let token: String
    let binary: String

    private init(process: ChildProcess, port: Int, directory: String, configPath: String, token: String, binary: String) {
        self.process = process
        self.port = port
        self.directory = directory
        self.configPath = configPath
        self.token = token
        self.binary = binary
    }

    /// Starts the binary with `limits` (JSON values) and waits until it is healthy.
    static func start(limits: [String: Any] = [:], apns: [String: Any] = ["streamsBeforeAuthentication": 0]) async throws -> HostileServer {
        let binary = try GracefulShutdownTests.executable()
        let directory = try makeTemporaryDirectory("hostile")
        try ES256PrivateKey.generate().pkcs8PEM.write(toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let configuration: [String: Any] = [
            "limits": limits,
            "apns": apns,
            // No fsync per commit: a push's answer then measures the server, not the shared disk.
            "storage": ["synchronous": "normal"],
            "teams": [["teamID": testTeamID, "keys": [["keyID": testKeyID, "privateKeyFile": "AuthKey.p8"]], "apps": [testTopic]]],
        ]
        let configPath = directory + "/sandbox.json"
        try JSONSerialization.data(withJSONObject: configuration).write(to: URL(fileURLWithPath: configPath))
        let token = try await run(binary, args: ["token", "--config", configPath]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (process, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: directory, config: configPath)
        return HostileServer(process: process, port: port, directory: directory, configPath: configPath, token: token, binary: binary)
    }

    /// Kills the server and removes its data.
    func stop() {
        process.send(signal: SIGKILL)
        _ = process.wait(timeout: 5)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether the process is still running.
    var isRunning: Bool { process.wait(timeout: 0) == nil }

    /// Resident memory now, in MB (VmRSS).
    var rssMegabytes: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }

    /// CPU time used so far (user + system), in seconds.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Stores `count` accepted pushes with a payload of about `payloadBytes` (h2load), so API listings are large.
    /// `streams`: h2load's streams per connection (1 when APNs' one stream before a valid push applies).
    func seedNotifications(count: Int, payloadBytes: Int = 2000, streams: Int = 50) async throws {
        let payload = directory + "/payload.json"
        let body = #"{"aps":{"alert":{"title":"seed","body":"\#(String(repeating: "b", count: payloadBytes))"}}}"#
        try body.write(toFile: payload, atomically: true, encoding: .utf8)
        let load = try await run("h2load", args: [
            "-n", "\(count)", "-c", "2", "-m", "\(streams)", "-d", payload, "-H", "apns-topic: \(testTopic)",
            "-H", "authorization: bearer \(token)", "http://127.0.0.1:\(port)/3/device/\(deviceToken)",
        ], timeout: 60)
        try #require(load.stdoutText.contains("\(count) 2xx"), "seeding: \(load)")
    }

    /// Runs `hostile_peer.py ATTACK …` against this server to its end; its JSON report.
    func attack(_ attack: String, _ arguments: [String], timeout: Double = 60) async throws -> AttackReport {
        let output = try await run("python3", args: [TestPaths.hostilePeer, attack, "--port", "\(port)"] + arguments, timeout: timeout)
        let line = output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        return AttackReport(try #require(jsonObject(line), "\(attack): \(output)"))
    }

    /// Starts `hostile_peer.py ATTACK …` without waiting for it.
    func startAttack(_ attack: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess("python3", arguments: [TestPaths.hostilePeer, attack, "--port", "\(port)"] + arguments)
    }

    /// Starts the well-behaved client: `/healthz` and a push, each on a new connection, every 100 ms for
    /// `seconds`, from `source` (another loopback address is another client).
    func startProbe(seconds: Double, source: String = "127.0.0.9") throws -> ChildProcess {
        try startAttack("probe", [
            "--seconds", "\(seconds)", "--token", token, "--device", deviceToken, "--topic", testTopic, "--source", source,
        ])
    }

    /// The highest RSS seen while `body` runs (sampled every 20 ms), and what `body` returned.
    func peakRSS<T: Sendable>(during body: @escaping @Sendable () async throws -> T) async throws -> (peak: Double, result: T) {
        let peak = PeakGauge()
        let sampler = Task.detached { [self] in
            while !Task.isCancelled {
                peak.record(rssMegabytes)
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
        }
        defer { sampler.cancel() }
        let result = try await body()
        peak.record(rssMegabytes)
        return (peak.value, result)
    }

    /// CPU the server uses per second over `window` seconds from now (1.0 = one core busy).
    func cpuLoad(over window: Double = 1) async throws -> Double {
        let before = cpuSeconds
        try await Task.sleep(nanoseconds: UInt64(window * 1e9))
        return (cpuSeconds - before) / window
    }

    /// Waits until the server's CPU use over a 0.5 s window falls below `threshold` of a core; the seconds
    /// that took (or nil if it did not within `timeout`).
    func secondsUntilIdle(threshold: Double = 0.1, timeout: Double = 5) async throws -> Double? {
        let start = monotonicSeconds()
        while monotonicSeconds() - start < timeout {
            if try await cpuLoad(over: 0.5) < threshold { return monotonicSeconds() - start }
        }
        return nil
    }
}

/// An attacker's JSON report. `@unchecked Sendable`: a parsed JSON tree is never mutated after parsing.
struct AttackReport: @unchecked Sendable, CustomStringConvertible {
    let json: [String: Any]

    init(_ json: [String: Any]) {
        self.json = json
    }

    subscript(key: String) -> Any? { json[key] }

    var description: String { "\(json)" }
}

/// The highest value recorded (thread-safe).
final class PeakGauge: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0.0

    func record(_ value: Double) {
        lock.lock()
        peak = max(peak, value)
        lock.unlock()
    }

    var value: Double {
        lock.lock()
        defer { lock.unlock() }
        return peak
    }
}

/// What the well-behaved probe saw: latencies in milliseconds and failures.
struct ProbeReport: CustomStringConvertible {
    var healthz: [Double]
    var push: [Double]
    var failures: [String]

    init(_ output: ProcessOutput) throws {
        let line = output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        let json = try #require(jsonObject(line), "probe: \(output)")
        healthz = json["healthz"] as? [Double] ?? []
        push = json["push"] as? [Double] ?? []
        failures = json["failures"] as? [String] ?? []
    }

    var worstHealthz: Double { healthz.max() ?? .infinity }
    var worstPush: Double { push.max() ?? .infinity }
    var medianHealthz: Double { Self.median(healthz) }
    var medianPush: Double { Self.median(push) }

    private static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .infinity }
        return values.sorted()[values.count / 2]
    }

    var description: String {
        "healthz ms \(healthz.map { String(format: "%.1f", $0) }), push ms \(push.map { String(format: "%.1f", $0) }), "
            + "failures \(failures)"
    }

    /// Every probe was answered (200) and typically within `milliseconds`, none stalled.
    ///
    /// The median must be within `milliseconds` and the worst within `stallMilliseconds`: the tests run
    /// beside each other (and the rest of the suite) on a few cores, so a single probe can wait for the
    /// CPU or the disk (a push's commit is an fsync) for reasons that are not the attack's; a server the
    /// attack starves (a busy event loop, as before the fix: seconds) fails either bound.
    func expectAnswered(
        within milliseconds: Double, stallMilliseconds: Double = 1000, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(failures.isEmpty, "\(label): \(self)", sourceLocation: sourceLocation)
        #expect(!healthz.isEmpty && !push.isEmpty, "\(label): \(self)", sourceLocation: sourceLocation)
        #expect(medianHealthz <= milliseconds && medianPush <= milliseconds, "\(label): \(self)", sourceLocation: sourceLocation)
        #expect(worstHealthz <= stallMilliseconds && worstPush <= stallMilliseconds, "\(label): \(self)", sourceLocation: sourceLocation)
    }
}

extension TestPaths {
    static var hostilePeer: String { packageRoot + "/Tests/Python/hostile_peer.py" }
}

/// The probe process, started once (by the attack, or before it).
final class ProbeSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var started: ChildProcess?

    func start(_ make: () throws -> ChildProcess) throws {
        lock.lock()
        defer { lock.unlock() }
        if started == nil { started = try make() }
    }

    var process: ChildProcess? {
        lock.lock()
        defer { lock.unlock() }
        return started
    }
}
