// APNs Sandbox — an emptied store file beside the state it belongs with, end to end with the real binary.
import Crypto
import Foundation
import Glibc
import TestProcessSupport
import Testing

/// A `sandbox.sqlite` truncated to 0 bytes while the server was stopped (a hostile-peer run left one): SQLite
/// would take it for a new database and the server would start empty beside `webhooks.sqlite`'s old outbox.
/// Real `apns-sandbox serve` processes and SQLite files, no mocks.
@Suite(.scaledTimeLimit(minutes: 3))
struct HostileEmptyStoreTests {
    private static func writeConfiguration(in directory: String, name: String = "sandbox.json", storage: String = "") throws -> String {
        let key = directory + "/AuthKey.p8"
        if !FileManager.default.fileExists(atPath: key) {
            try ES256PrivateKey.generate().pkcs8PEM.write(toFile: key, atomically: true, encoding: .utf8)
        }
        let json = """
            {
              "apns": { "streamsBeforeAuthentication": 0 },
              "storage": { "synchronous": "normal"\(storage.isEmpty ? "" : ", " + storage) },
              "teams": [ { "teamID": "\(testTeamID)", "keys": [ { "keyID": "\(testKeyID)", "privateKeyFile": "AuthKey.p8" } ],
                           "apps": [ "\(testTopic)" ] } ]
            }
            """
        let path = directory + "/" + name
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private static func serveExpectingRefusal(_ binary: String, dataDirectory: String, config: String) async throws -> ProcessOutput {
        let server = try ChildProcess(binary, arguments: [
            "serve", "--config", config, "--data-dir", dataDirectory, "--tls-port", "0",
            "--http-port", "\(try RawSocket.freePort())", "--host", "127.0.0.1", "--log-level", "warning",
        ])
        return await offload { server.finish(timeout: 30) }
    }

    private static func stop(_ server: ChildProcess) async -> ProcessOutput {
        server.send(signal: SIGTERM)
        return await offload { server.finish(timeout: 15) }
    }

    private static func truncate(_ path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 0)
        try handle.close()
    }

    private static func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    /// 50 pushes and a webhook subscription, then `sandbox.sqlite` emptied while the server was stopped:
    /// `serve` exits non-zero with one line that names the file, the state beside it and how to start afresh,
    /// and leaves every file as it was. `storage.onCorruption: moveAside` keeps the empty file aside and starts
    /// empty (the subscription, in `webhooks.sqlite`, is still there). Following the line's advice — removing
    /// the store and the outbox with their -wal and -shm — starts afresh, ready.
    @Test func emptiedStoreBesideAnOutboxIsRefused() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("empty-store")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try Self.writeConfiguration(in: dataDirectory)
        let token = try await run(binary, args: ["token", "--config", config]).stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let subscribed = try await apiRequest(
            "POST", "http://127.0.0.1:\(port)/api/v1/webhooks", #"{"url":"http://127.0.0.1:9/hook","topics":["\#(testTopic)"]}"#)
        #expect(subscribed.status == 201, "\(subscribed)")
        let pushes = try await curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}\n", "-X", "POST", "-H", "authorization: bearer \(token)",
            "-H", "apns-topic: \(testTopic)", "-d", #"{"aps":{"alert":"kept?"}}"#,
        ] + Array(repeating: "http://127.0.0.1:\(port)/3/device/\(deviceToken)", count: 50))
        #expect(pushes.stdoutText.split(separator: "\n") == Array(repeating: "200", count: 50), "\(pushes)")
        let stopped = await Self.stop(server)
        #expect(stopped.status == 0, "\(stopped)")

        let store = dataDirectory + "/sandbox.sqlite"
        let outbox = dataDirectory + "/webhooks.sqlite"
        try Self.truncate(store)
        let outboxBefore = try #require(Self.contents(outbox))
        #expect(!outboxBefore.isEmpty)

        let refused = try await Self.serveExpectingRefusal(binary, dataDirectory: dataDirectory, config: config)
        let message = refused.stderrText
        #expect(!refused.timedOut && refused.status != 0, "\(refused)")
        #expect(message.contains("cannot start: store \(store) is empty (0 bytes)"), "\(message)")
        #expect(message.contains("webhooks.sqlite ("), "names the state beside it: \(message)")
        #expect(message.contains("move the data directory aside") && message.contains("remove sandbox.sqlite and webhooks.sqlite"),
                "says how to start afresh: \(message)")
        #expect(message.contains("onCorruption"), "\(message)")
        #expect(message.split(separator: "\n").count == 1, "one error line: \(message)")
        #expect(Self.contents(store)?.isEmpty == true, "the store file was left as it was")
        #expect(Self.contents(outbox) == outboxBefore, "the outbox was left as it was")

        // moveAside: the empty file is kept aside, the server starts empty, the outbox's subscription is kept.
        let moving = try Self.writeConfiguration(in: dataDirectory, name: "move.json", storage: #""onCorruption": "moveAside""#)
        let (moved, movedPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: moving)
        let list = try await apiRequest("GET", "http://127.0.0.1:\(movedPort)/api/v1/notifications?limit=1")
        #expect(list.json?["total"] as? Int == 0, "a new, empty store: \(list)")
        let hooks = try await apiRequest("GET", "http://127.0.0.1:\(movedPort)/api/v1/webhooks")
        #expect("\(hooks)".contains("127.0.0.1:9/hook"), "the outbox is kept: \(hooks)")
        let movedOutput = await Self.stop(moved)
        #expect(movedOutput.stderrText.contains("EMPTY STORE MOVED ASIDE"), "\(movedOutput)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: dataDirectory)
            .filter { $0.hasPrefix("sandbox.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(kept.count == 1, "\(kept)")

        // Empty again, then the advice of the refusal: remove both files (with -wal and -shm); the CA stays.
        try Self.truncate(store)
        let again = try await Self.serveExpectingRefusal(binary, dataDirectory: dataDirectory, config: config)
        #expect(again.status != 0 && again.stderrText.contains("is empty (0 bytes)"), "\(again)")
        let ca = Self.contents(dataDirectory + "/ca.pem")
        for name in ["sandbox.sqlite", "webhooks.sqlite"] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dataDirectory + "/" + name + suffix) }
        }
        let (fresh, freshPort) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let ready = try await apiRequest("GET", "http://127.0.0.1:\(freshPort)/readyz")
        #expect(ready.status == 200, "\(ready)")
        #expect(Self.contents(dataDirectory + "/ca.pem") == ca, "the CA is kept: clients still trust it")
        _ = await Self.stop(fresh)
    }

    /// A fresh data directory whose store file is empty — nothing else but what every start creates before
    /// the store opens (the CA, the server certificate, the admin token, the lock) — starts: an empty file
    /// there is a new store (as a start that died before the store's first write leaves it). So does an
    /// empty store beside an empty `attachments/` directory.
    @Test func emptyStoreInAFreshDirectoryStarts() async throws {
        let binary = try GracefulShutdownTests.executable()
        let dataDirectory = try makeTemporaryDirectory("empty-store-fresh")
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let config = try Self.writeConfiguration(in: dataDirectory)
        // The CA and server certificate, as a first start makes them before it opens the store.
        let issued = try await run(binary, args: [
            "client-cert", "--config", config, "--data-dir", dataDirectory, "--bundle-id", testTopic, "--out", dataDirectory + "/client",
        ])
        #expect(FileManager.default.fileExists(atPath: dataDirectory + "/ca.pem"), "\(issued)")
        try FileManager.default.createDirectory(atPath: dataDirectory + "/attachments", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dataDirectory + "/sandbox.sqlite", contents: Data())
        _ = FileManager.default.createFile(atPath: dataDirectory + "/webhooks.sqlite", contents: Data())
        let (server, port) = try await GracefulShutdownTests.startBinary(binary, dataDirectory: dataDirectory, config: config)
        let ready = try await apiRequest("GET", "http://127.0.0.1:\(port)/readyz")
        #expect(ready.status == 200, "\(ready)")
        let output = await Self.stop(server)
        #expect(output.status == 0, "\(output)")
        #expect((Self.contents(dataDirectory + "/sandbox.sqlite")?.count ?? 0) > 0, "a store now")
    }
}
