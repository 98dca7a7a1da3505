// APNs Sandbox — service extensions through the whole server: push → instance → what the user sees.
import Crypto
import Foundation
import Server
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct ExtensionEndToEndTests {
    /// The built example extension (Examples/NotificationService), next to the test bundle.
    static func exampleExtension() throws -> String {
        let server = try GracefulShutdownTests.executable()
        let path = URL(fileURLWithPath: server).deletingLastPathComponent().appendingPathComponent("ExampleNotificationService").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ProcessError("ExampleNotificationService not built at \(path); run `swift build --build-tests`")
        }
        return path
    }

    /// A 1×1 PNG.
    static let png: [UInt8] = Array(Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")!)

    private func post(_ url: String, _ body: String, method: String = "POST") async throws -> ProcessOutput {
        try await curl(["-X", method, url, "-H", "content-type: application/json", "-d", body, "-w", "\n%{http_code}"])
    }

    private func push(_ server: TestServer, device: String, payload: String) async throws -> String {
        let output = try await curl([
            "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "-X", "POST", "\(server.httpBase)/3/device/\(device)",
            "-H", server.authorizationHeader, "-H", "apns-topic: \(testTopic)", "-d", payload,
        ])
        return output.stdoutText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("apns-id:") }
            .map { $0.dropFirst("apns-id:".count).trimmingCharacters(in: .whitespaces) } ?? ""
    }

    private func record(_ server: TestServer, _ apnsID: String) async throws -> [String: Any] {
        let output = try await curl(["\(server.httpBase)/api/v1/notifications/\(apnsID)?wait=20"])
        return try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "\(output)")
    }

    /// Starts the media server over `directory`; returns it and its port (its first line). Python can take
    /// seconds to start while the whole suite runs: a generous deadline, and an early end if it exits.
    private func mediaServer(directory: String, delay: Double) async throws -> (ChildProcess, Int) {
        let child = try ChildProcess("python3", arguments: [
            TestPaths.packageRoot + "/Tests/Python/media_server.py", "--dir", directory, "--delay", "\(delay)",
        ])
        let deadline = monotonicSeconds() + TestTime.seconds(30)
        while monotonicSeconds() < deadline, child.wait(timeout: 0) == nil {
            if let line = child.currentStdout.split(separator: "\n").first, let port = Int(line) { return (child, port) }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        child.send(signal: SIGKILL)
        throw ProcessError("media server did not start: \(child.currentStderr)")
    }

    /// Waits until the media server has received a request for `path` (it prints `GET <path>` on arrival).
    private func waitForRequest(_ media: ChildProcess, path: String) async throws {
        let deadline = monotonicSeconds() + TestTime.seconds(30)
        while !media.currentStdout.split(separator: "\n").contains(Substring("GET \(path)")) {
            guard monotonicSeconds() < deadline else { throw ProcessError("no request for \(path): \(media.currentStdout)") }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    /// The Swift example extension (exec): an encrypted push with a media URL is shown decrypted with the
    /// image attached; with the image slower than the budget, the decrypted best attempt without media.
    /// The budget is sandbox time: the clock stands still, so the first push has all the (real) time a loaded
    /// machine needs to start the process and download (a 3 s real budget once ran out: best-attempt), and the
    /// second one's budget ends when the clock is advanced past it, once the download has begun (the example
    /// decrypts before it downloads).
    @Test func swiftExampleDecryptsAndAttaches() async throws {
        let example = try Self.exampleExtension()
        let media = try makeTemporaryDirectory("media")
        defer { try? FileManager.default.removeItem(atPath: media) }
        try Data(Self.png).write(to: URL(fileURLWithPath: media + "/pic.png"))
        let (fast, fastPort) = try await mediaServer(directory: media, delay: 0)
        let (slow, slowPort) = try await mediaServer(directory: media, delay: 10)
        defer {
            fast.send(signal: SIGKILL)
            slow.send(signal: SIGKILL)
        }
        try await withServer(configure: {
            $0.extensions.allowedExecutables = [example]
            $0.clock = ClockSettings(virtual: true, frozen: true)
        }) { server in
            let configured = try await post(
                "\(server.httpBase)/api/v1/apps/\(testTopic)",
                #"{"serviceExtension":{"kind":"exec","path":"\#(example)","budgetMs":3000,"graceMs":1000}}"#,
                method: "PATCH")
            #expect(configured.stdoutText.hasSuffix("\n200"), "\(configured)")
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let device = String(repeating: "5a", count: 32)
            let created = try await post(
                "\(server.httpBase)/api/v1/devices",
                #"{"token":"\#(device)","apps":["\#(testTopic)"],"keys":{"\#(testTopic)":"\#(Data(key).base64EncodedString())"}}"#)
            #expect(created.stdoutText.hasSuffix("\n201"), "\(created)")
            let secret = try AESGCM.seal(Array(#"{"title":"Secret title","body":"Secret body","order":42}"#.utf8), key: key)
            let encrypted = Data(secret).base64EncodedString()

            func payload(_ port: Int) -> String {
                #"{"aps":{"alert":{"title":"Encrypted","body":"(hidden)"},"mutable-content":1},"encrypted_data":"\#(encrypted)","media-url":"http://127.0.0.1:\#(port)/pic.png"}"#
            }
            let processed = try await record(server, try await push(server, device: device, payload: payload(fastPort)))
            #expect(processed["outcome"] as? String == "processed", "\(processed)")
            let shown = try #require(processed["displayed"] as? [String: Any])
            #expect(shown["title"] as? String == "Secret title")
            #expect(shown["body"] as? String == "Secret body")
            let attachments = shown["attachments"] as? [[String: Any]] ?? []
            #expect(attachments.count == 1 && attachments.first?["type"] as? String == "image/png", "\(attachments)")
            // One shape everywhere: an href that serves the file, never a server path.
            #expect(attachments.first?["path"] == nil, "\(attachments)")
            let href = try #require(attachments.first?["href"] as? String)
            let file = try await curl([server.httpBase + href])
            #expect(Array(file.stdout) == Self.png)
            let center = try await curl(["\(server.httpBase)/api/v1/devices/\(device)/notification-center"])
            let shownInCenter = (jsonObject(center.stdout)?["notifications"] as? [[String: Any]])?
                .compactMap { ($0["content"] as? [String: Any])?["attachments"] as? [[String: Any]] }.flatMap { $0 } ?? []
            #expect(shownInCenter.map { $0["href"] as? String } == [href], "\(shownInCenter)")

            let slowID = try await push(server, device: device, payload: payload(slowPort))
            try await waitForRequest(slow, path: "/pic.png")
            let advanced = try await apiRequest("POST", "\(server.httpBase)/api/v1/clock/advance", #"{"milliseconds":3000}"#)
            #expect(advanced.status == 200, "\(advanced)")
            let best = try await record(server, slowID)
            #expect(best["outcome"] as? String == "best-attempt", "\(best)")
            let bestShown = try #require(best["displayed"] as? [String: Any])
            #expect(bestShown["title"] as? String == "Secret title")
            #expect((bestShown["attachments"] as? [Any])?.isEmpty == true)
            let steps = (best["timeline"] as? [[String: Any]])?.compactMap { $0["step"] as? String } ?? []
            #expect(steps.contains("extension-running") && steps.last == "displayed", "\(steps)")
        }
    }

    /// A builtin pipeline rewrites the alert; a push without mutable-content is shown directly.
    @Test func builtinRewriteAndDirect() async throws {
        try await withServer { server in
            let configured = try await post(
                "\(server.httpBase)/api/v1/apps/\(testTopic)",
                #"{"serviceExtension":{"kind":"builtin","steps":[{"step":"rewrite","title":"[Processed] {{title}}"}]}}"#,
                method: "PATCH")
            #expect(configured.stdoutText.hasSuffix("\n200"), "\(configured)")
            let processed = try await record(server, try await push(
                server, device: deviceToken, payload: #"{"aps":{"alert":{"title":"Hi","body":"b"},"mutable-content":1}}"#))
            #expect(processed["outcome"] as? String == "processed")
            #expect((processed["displayed"] as? [String: Any])?["title"] as? String == "[Processed] Hi")
            let direct = try await record(server, try await push(
                server, device: deviceToken, payload: #"{"aps":{"alert":{"title":"Hi","body":"b"}}}"#))
            #expect(direct["outcome"] as? String == "direct")
            let bad = try await post(
                "\(server.httpBase)/api/v1/apps/\(testTopic)", #"{"serviceExtension":{"kind":"teleport"}}"#, method: "PATCH")
            #expect(bad.stdoutText.hasSuffix("\n422"), "\(bad)")
            // `null` removes the extension: mutable-content pushes are then shown directly.
            let removed = try await post("\(server.httpBase)/api/v1/apps/\(testTopic)", #"{"serviceExtension":null}"#, method: "PATCH")
            #expect(removed.stdoutText.hasSuffix("\n200"), "\(removed)")
            let plain = try await record(server, try await push(
                server, device: deviceToken, payload: #"{"aps":{"alert":{"title":"Hi","body":"b"},"mutable-content":1}}"#))
            #expect(plain["outcome"] as? String == "direct")
        }
    }
}
