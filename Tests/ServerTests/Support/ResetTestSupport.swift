// APNs Sandbox — test support for resets and snapshots: a configured sandbox, real-client pushes, raw API reads.
import APNsProtocol
import Foundation
import Server
import Synchronization
import Support

/// The device the configuration declares in these tests.
let seededToken = String(repeating: "5e", count: 32)
/// A second app of the test team, declared in the configuration.
let otherTopic = "com.example.other"

/// The configuration these tests share: a configured device (with the test app) and two configured apps.
func withSeededServer<T>(
    configure: (inout SandboxConfiguration) -> Void = { _ in }, _ body: (TestServer) async throws -> T
) async throws -> T {
    try await withServer(configure: { configuration in
        configuration.devices = [DeviceConfiguration(token: seededToken, apps: [testTopic])]
        configuration.apps = [
            AppConfiguration(bundleID: testTopic, teamID: testTeamID, strings: ["en": ["HI": "Hello %@"]]),
            AppConfiguration(bundleID: otherTopic, teamID: testTeamID),
        ]
        configure(&configuration)
    }, body)
}

/// Pushes with the real `aioapns` client over TLS (Tests/Python/aioapns_client.py): `count` pushes to
/// `token`, or to fresh random tokens when it is nil. Returns the outcome counts ("200": n, …).
func aioapnsPush(
    _ server: TestServer, token: String?, count: Int, concurrency: Int = 10, timeout: Double = 25
) async throws -> [String: Int] {
    var arguments = [
        "python3", TestPaths.packageRoot + "/Tests/Python/aioapns_client.py",
        "--port", String(server.tlsPort), "--cafile", server.caPath, "--server-name", "localhost",
        "--key-file", server.dataDirectory + "/AuthKey_\(testKeyID).p8", "--key-id", testKeyID,
        "--team-id", testTeamID, "--topic", testTopic, "--timeout", "\(Int(timeout))",
        "--count", "\(count)", "--concurrency", "\(concurrency)",
    ]
    arguments += token.map { ["--token", $0] } ?? ["--random-tokens"]
    let output = try await run("/usr/bin/env", args: arguments, timeout: timeout + 15)
    guard output.status == 0 else { throw ProcessError("aioapns run failed: \(output)") }
    let line = output.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
    let report = jsonObject(line) ?? [:]
    return (report["results"] as? [String: Any])?.compactMapValues { $0 as? Int } ?? [:]
}

/// Pushes an alert over h2c to `token` with `topic`; returns the HTTP status.
func pushStatus(_ server: TestServer, token: String, topic: String = testTopic, body: String = #"{"aps":{"alert":"Hi"}}"#) async throws -> Int {
    let output = try await curl([
        "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
        "\(server.httpBase)/3/device/\(token)", "-H", server.authorizationHeader, "-H", "apns-topic: \(topic)", "-d", body,
    ])
    return Int(output.stdoutText) ?? 0
}

/// A GET of the API, parsed (any JSON value), with `cursor` dropped from objects (it counts rows ever
/// created, which differs between two servers with the same records).
func apiValue(_ base: String, _ path: String) async throws -> NSObject {
    let output = try await curl(["\(base)\(path)"])
    guard var value = try JSONSerialization.jsonObject(with: output.stdout) as? NSObject else {
        throw ProcessError("not JSON from \(path): \(output)")
    }
    if var object = value as? [String: Any] {
        object["cursor"] = nil
        value = object as NSDictionary
    }
    return value
}

/// `POST base+path` with a JSON body (or none); the status and the body parsed.
func apiPost(_ base: String, _ path: String, _ body: String? = nil) async throws -> (status: Int, json: [String: Any]?) {
    try await apiRequest("POST", base + path, body)
}

/// A participant for the hook's tests: one number, the scopes it was reset with, its restores.
final class CounterParticipant: SteeringParticipant {
    let name = "counter"
    private struct State {
        var value = 0
        var resets: [ResetScope] = []
        var restores = 0
    }

    private let state = Locked(State())

    var value: Int {
        get { state.withLock { $0.value } }
        set { state.withLock { $0.value = newValue } }
    }

    var resets: [ResetScope] { state.withLock { $0.resets } }
    var restores: Int { state.withLock { $0.restores } }

    func reset(_ scope: ResetScope) throws {
        state.withLock { state in
            state.resets.append(scope)
            if scope == .all { state.value = 0 }
        }
    }

    func export() throws -> JSON {
        .object([("value", .number(value))])
    }

    func validate(_ section: JSON) throws {
        guard let members = section.members else { throw SnapshotSectionError(path: "", "must be an object") }
        if let unknown = members.first(where: { $0.0 != "value" }) {
            throw SnapshotSectionError(path: unknown.0, "unknown field")
        }
        guard let number = section["value"]?.int, number >= 0 else {
            throw SnapshotSectionError(path: "value", "must be a whole number ≥ 0")
        }
        _ = number
    }

    func restore(_ section: JSON) throws {
        state.withLock { state in
            state.value = section["value"]?.int ?? 0
            state.restores += 1
        }
    }
}
