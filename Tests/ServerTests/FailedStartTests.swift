// APNs Sandbox — a server whose start fails leaves nothing behind: no thread, no timer, no lock.
import Crypto
import Foundation
import Glibc
@testable import Server
import Support
import TestProcessSupport
import Testing

/// Each failing start runs in a child process: this test bundle again, running only ``FailedStartProbe``.
/// There the failing server's threads are the only ones with the sandbox's thread names, so a thread left
/// behind is found by its name alone (in this process, other tests' servers have threads of the same names).
@Suite struct FailedStartTests {
    /// A listener whose port another socket holds fails the start at its last steps, after the stores,
    /// the extension runtime, the webhook sender and dispatcher, retention and the event loops started:
    /// building the server started no thread; the start throws the bind error, stops each service that
    /// started, and afterwards no thread of it runs, no timer is left on the clock, the stores are closed,
    /// and a second server on the same data directory starts while the failed one is still there.
    @Test(.scaledTimeLimit(minutes: 3)) func aFailedBindStopsEverythingThatStarted() async throws {
        let result = try await FailedStartProbe.run(.bind)
        let error = result["error"] as? String ?? ""
        let port = result["port"] as? Int ?? -1
        #expect(error.contains("listener cleartext cannot listen") && error.contains(":\(port)"), "\(result)")
        #expect(result["threadsAfterInit"] as? [String] == [], "building the server started threads: \(result)")
        // It got that far, and unwound: the group logs each start and stop (debug).
        let started = result["started"] as? [String] ?? []
        let stopped = result["stopped"] as? [String] ?? []
        for service in ["store", "extension runtime", "webhook outbox", "retention", "webhook sender", "event loops"] {
            #expect(started.contains(service) && stopped.contains(service), "\(service): \(result)")
        }
        #expect(!stopped.contains("listeners") && !stopped.contains("readiness"), "only what started is stopped")
        #expect(result["threadsLeft"] as? [String] == [], "threads of the failed start still run: \(result)")
        #expect(result["pendingTimers"] as? Int == 0, "a timer is left on the clock (retention?): \(result)")
        #expect(result["retentionScheduled"] as? Bool == false)
        #expect(result["storesClosed"] as? Bool == true)
        #expect(result["servicesLeft"] as? [String] == [])
        #expect(result["secondServer"] as? String == "served", "the data directory is still locked: \(result)")
    }

    /// A team key file that does not exist fails the server before anything starts: no thread appears,
    /// and the data directory's lock (taken first) is given up.
    @Test(.scaledTimeLimit(minutes: 3)) func aMissingKeyFileStartsNothing() async throws {
        let result = try await FailedStartProbe.run(.missingKey)
        let error = result["error"] as? String ?? ""
        #expect(error.contains("AuthKey_MISSING.p8"), "\(result)")
        #expect(result["threadsLeft"] as? [String] == [], "\(result)")
        #expect(result["secondServer"] as? String == "served", "the data directory is still locked: \(result)")
    }
}

/// The child's side of ``FailedStartTests``: does its work only when `APNS_SANDBOX_FAILED_START` names a
/// case (as the child started by ``run(_:)``), and passes at once otherwise. Writes what it saw as JSON to
/// `APNS_SANDBOX_FAILED_START_RESULT`.
@Suite struct FailedStartProbe {
    enum Case: String {
        case bind, missingKey
    }

    static let caseVariable = "APNS_SANDBOX_FAILED_START"
    static let resultVariable = "APNS_SANDBOX_FAILED_START_RESULT"
    static let dataVariable = "APNS_SANDBOX_FAILED_START_DATA"

    /// Runs `failingCase` in a child process; what it saw.
    static func run(_ failingCase: Case) async throws -> [String: Any] {
        let directory = try makeTemporaryDirectory("failed-start")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let resultFile = directory + "/result.json"
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let child = try ChildProcess(bundle, arguments: ["--testing-library", "swift-testing", "--filter", "FailedStartProbe"],
                                     environment: [
                                         caseVariable: failingCase.rawValue, resultVariable: resultFile,
                                         dataVariable: directory + "/data",
                                     ])
        let output = await offload { child.finish(timeout: 150) }
        try #require(output.status == 0 && !output.timedOut, "the probe failed: \(output)")
        let data = try #require(FileManager.default.contents(atPath: resultFile), "no result: \(output)")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(output)")
    }

    @Test func failingStart() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let name = environment[Self.caseVariable], let failingCase = Case(rawValue: name),
            let resultFile = environment[Self.resultVariable], let data = environment[Self.dataVariable]
        else { return }
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        var result: [String: Any] = [:]
        let before = Self.sandboxThreads()
        result["threadsBefore"] = before
        var configuration = try Self.configuration(data: data)
        var taken: ListeningSocket?
        switch failingCase {
        case .bind:
            let socket = try ListeningSocket()
            taken = socket
            result["port"] = socket.port
            configuration.listeners[1].port = socket.port
        case .missingKey:
            configuration.teams[0].keys = [.init(keyID: testKeyID, privateKeyFile: data + "/AuthKey_MISSING.p8")]
        }
        let sink = LogSink.capturing()
        var server: SandboxServer?
        do {
            let built = try SandboxServer(configuration: configuration, logger: Logger(label: "failing", level: .debug, sink: sink))
            server = built
            result["threadsAfterInit"] = Self.sandboxThreads().filter { !before.contains($0) }
            try built.start()
            result["error"] = "none: the start succeeded"
        } catch {
            result["error"] = "\(error)"
        }
        // Threads end a moment after their owner's stop returned.
        let deadline = Date().addingTimeInterval(10)
        var left = Self.sandboxThreads().filter { !before.contains($0) }
        while !left.isEmpty && Date() < deadline {
            usleep(20_000)
            left = Self.sandboxThreads().filter { !before.contains($0) }
        }
        result["threadsLeft"] = left
        let lines = sink.capturedLines
        result["started"] = Self.services(in: lines, after: "starting ")
        result["stopped"] = Self.services(in: lines, after: "stopping ")
        if let server {
            result["pendingTimers"] = server.clock.pendingTaskCount
            result["retentionScheduled"] = server.retention.isScheduled
            result["storesClosed"] = server.store.isClosed && server.outbox.isClosed
            result["servicesLeft"] = server.services.startedServices
        }
        // While the failed server is still there: a second one on the directory starts and stops.
        do {
            let second = try SandboxServer(
                configuration: try Self.configuration(data: data), logger: Logger(label: "second", level: .error, sink: .capturing()))
            try second.start()
            second.shutdown()
            result["secondServer"] = "served"
        } catch {
            result["secondServer"] = "\(error)"
        }
        server?.shutdown()  // after a failed start: nothing more to do, and harmless
        withExtendedLifetime(taken) {}
        try JSONSerialization.data(withJSONObject: result).write(to: URL(fileURLWithPath: resultFile))
    }

    /// `withServer`'s configuration (a team with a fresh key, TLS and cleartext on port 0) on `data`.
    static func configuration(data: String) throws -> SandboxConfiguration {
        var configuration = SandboxConfiguration()
        configuration.dataDirectory = data
        let keyFile = data + "/AuthKey_\(testKeyID).p8"
        try ES256PrivateKey.generate().pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        configuration.teams = [
            TeamConfiguration(teamID: testTeamID, keys: [.init(keyID: testKeyID, privateKeyFile: keyFile)], apps: [testTopic])
        ]
        configuration.eventLoops = 2
        configuration.logLevel = .warning
        configuration.listeners = [
            .init(name: "tls", host: "127.0.0.1", port: 0, tls: true),
            .init(name: "cleartext", host: "127.0.0.1", port: 0, tls: false),
        ]
        return configuration
    }

    /// The threads of this process with the names the sandbox gives its own (`/proc/self/task/*/comm`, at
    /// most 15 bytes), as `name[tid]`.
    static func sandboxThreads() -> [String] {
        var threads: [String] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(entry)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            else { continue }
            if ["store-writer", "webhook-http", "nse-http", "blocking-work", "nse-processes", "sse-catch-up"].contains(name)
                || name.hasPrefix("sandbox-loop-") || name.hasPrefix("nse-launcher-")
            {
                threads.append("\(name)[\(entry)]")
            }
        }
        return threads.sorted()
    }

    /// The service names of the lifecycle's `"starting <name>"` (or `"stopping <name>"`) debug lines.
    static func services(in lines: [String], after prefix: String) -> [String] {
        lines.compactMap { line in
            guard line.contains("component=lifecycle"), let start = line.range(of: "\"" + prefix) else { return nil }
            let rest = line[start.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
    }
}

/// A listening TCP socket on a free port of 127.0.0.1, closed when the value goes.
final class ListeningSocket: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try RawSocket.bindLoopback(listening: true)
    }

    deinit {
        Glibc.close(fd)
    }
}
