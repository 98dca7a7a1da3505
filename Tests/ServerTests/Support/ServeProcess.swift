// APNs Sandbox — end-to-end test support: starting `apns-sandbox serve` as a child process, and knowing it is
// this child that answers.
import Foundation
import Glibc
import TestProcessSupport

/// Where a spawned server's cleartext listener goes.
enum ServePort: Sendable {
    /// Port 0: the kernel picks a free port as the server binds, and the server's own "ready" line names it. No
    /// other process can hold it in between: the default.
    case ephemeral
    /// A port that was free a moment ago (bound to port 0 and released), for a test that must write the port where
    /// the server cannot tell it (a configuration file another command reads). Another process may take it before
    /// the server binds: then the server exits with "Address already in use" and another port is tried.
    case picked
}

extension GracefulShutdownTests {
    /// Starts `apns-sandbox serve` with the arguments `arguments` gives for its cleartext port (0 for
    /// ``ServePort/ephemeral``) and waits until it is ready; returns the process and its cleartext port.
    ///
    /// Ready means: the child's *own* stderr has its "APNs Sandbox ready" line (logged after every listener is
    /// bound), naming its cleartext port, and `GET /healthz` on that port answers 200 while the child still runs.
    /// A port is learnt from the process that bound it, never guessed, so another test's server on a reused port
    /// cannot pass for this one (the health answer alone says nothing of who gave it). The arguments must log at
    /// `notice` or below (`--log-level notice`, the default `info`, `debug`, `trace`).
    ///
    /// Failures say which case they are: the child exited by itself (its status or signal, after how long, with
    /// its output; the helper sends nothing before it gives up), or it was still not ready when the (long, scaled)
    /// start timeout ran out and the helper killed it. Only "Address already in use" for a ``ServePort/picked``
    /// port is retried, with another port.
    static func startServing(
        _ binary: String, environment: [String: String]? = nil, port choice: ServePort = .ephemeral,
        timeout: Double = 90, _ arguments: (Int) throws -> [String]
    ) async throws -> (ChildProcess, Int) {
        var attempts: [String] = []
        for attempt in 1...3 {
            let requested = choice == .ephemeral ? 0 : try RawSocket.freePort()
            let argv = try arguments(requested)
            if let index = argv.firstIndex(of: "--log-level"), index + 1 < argv.count,
               ["warning", "error", "critical"].contains(argv[index + 1]) {
                throw ProcessError("startServing needs the ready line: log at notice or below, not \(argv[index + 1])")
            }
            let server = try ChildProcess(binary, arguments: argv, environment: environment)
            switch await waitUntilReady(server, requested: requested, timeout: timeout) {
            case .ready(let port):
                return (server, port)
            case .portTaken(let report):
                attempts.append("attempt \(attempt), port \(requested): \(report)")
            case .failed(let report):
                throw ProcessError(
                    "apns-sandbox serve did not become ready: \(report)"
                        + (attempts.isEmpty ? "" : "\nearlier: \(attempts.joined(separator: "\n"))"))
            }
        }
        throw ProcessError("apns-sandbox serve found no free port: \(attempts.joined(separator: "\n"))")
    }

    enum Readiness {
        case ready(port: Int)
        case portTaken(String)
        case failed(String)
    }

    /// Waits for the ready line and a 200 from `/healthz` on the port it names. A child that exits is noticed at
    /// once; the long timeout is for the first seconds of a full `swift test`, when hundreds of tests start
    /// together on two cores and a server (or this polling) can wait its turn for a long time (seen: over 15 s).
    static func waitUntilReady(_ server: ChildProcess, requested: Int, timeout: Double) async -> Readiness {
        let started = monotonicSeconds()
        let deadline = started + TestTime.seconds(timeout)
        var lastProbe = "no ready line yet"
        while monotonicSeconds() < deadline {
            if server.wait(timeout: 0) != nil {
                let output = server.finish(timeout: 1)
                let report = "exited by itself after \(elapsed(since: started)) s, the helper had sent no signal: \(output)"
                if requested != 0, output.stderrText.contains("Address already in use") { return .portTaken(report) }
                return .failed(report)
            }
            if let port = readyPort(server.currentStderr) {
                if requested != 0, port != requested {
                    server.send(signal: SIGKILL)
                    return .failed("ready on port \(port), not the requested \(requested): \(server.finish(timeout: 5))")
                }
                // The child logged that it holds `port` and still runs: the answer is its own.
                do {
                    let answer = try await healthz(port: port, timeout: 2)
                    if answer?.status == 200, server.wait(timeout: 0) == nil { return .ready(port: port) }
                    lastProbe = "/healthz on \(port): \(answer.map { "\($0.status)" } ?? "no answer")"
                } catch {
                    lastProbe = "/healthz on \(port): \(error)"
                }
            }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        server.send(signal: SIGKILL)
        return .failed(
            "not ready after \(elapsed(since: started)) s (\(lastProbe)); still running, so the helper killed it: "
                + "\(server.finish(timeout: 5))")
    }

    /// The cleartext port of the "APNs Sandbox ready" line in `log`, if it is there yet.
    static func readyPort(_ log: String) -> Int? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("\"APNs Sandbox ready\"") }),
              let match = line.firstMatch(of: #/ports="[^"]*\bcleartext=(\d+)/#)
        else { return nil }
        return Int(match.output.1)
    }

    private static func elapsed(since start: Double) -> String {
        String(format: "%.1f", monotonicSeconds() - start)
    }
}
