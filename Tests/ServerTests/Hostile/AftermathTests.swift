// APNs Sandbox — what a hostile peer leaves behind once it is answered or gone: memory given back, a bounded drain.
import Foundation
import Glibc
import Support
import TestProcessSupport
import Testing

/// The real binary (``HostileServer``) against `tests/python/hostile_peer.py`, as in ``HostileHTTPTests``; here
/// what matters is after the attack: the RSS once the peer has left, the bytes read after a refusal.
@Suite(.scaledTimeLimit(minutes: 2))
struct HostileAftermathTests {
    /// An HTTP/1.1 upload refused at once — `413` for a `Content-Length` over `maxBodyBytes`, `431` for a
    /// header block over `maxHeaderBytes` — by a client that keeps writing regardless: the server reads and
    /// drops at most `maxBodyBytes` (1 MiB) more, then closes (the peer had acknowledged the answer). The
    /// client's socket takes at most that plus the kernel's buffers on both sides (16 MiB allowed; measured
    /// 1.1–1.4 MB), and the close comes before the linger's 2 s (measured: 1 ms; before, the server read for
    /// 2.2 s: 2.5–3.6 GB at loopback speed). A client that reads while it sends (curl, here with a 50 MB body
    /// and no `Expect`) still gets its 413.
    @Test func theDrainAfterA413Or431IsBoundedByBytes() async throws {
        let server = try await HostileServer.start()
        defer { server.stop() }
        let cases: [(status: String, arguments: [String])] = [
            ("413", ["--path", "/api/v1/devices"]),
            ("413", ["--path", "/3/device/\(deviceToken)", "--header", "apns-topic: \(testTopic)"]),
            ("431", ["--path", "/api/v1/devices", "--header", "x-padding: " + String(repeating: "p", count: 20_000)]),
        ]
        for (status, arguments) in cases {
            let report = try await server.attack(
                "http1-upload", arguments + ["--body-bytes", "100000000000", "--seconds", "\(TestTime.seconds(10))"])
            print("hostile aftermath, HTTP/1.1 upload after its \(status): \(report)")
            #expect(report["status"] as? String == status, "\(report)")
            #expect(report["ending"] is String, "the server closed the connection: \(report)")
            let after = report["sentAfterResponse"] as? Int ?? .max
            #expect(after <= 16 << 20, "bytes the client could write after the answer: \(after)")
            #expect((report["closedAfter"] as? Double ?? .infinity) < TestTime.seconds(1.5), "\(report)")
        }

        let body = server.directory + "/large.json"
        try Data(repeating: UInt8(ascii: "a"), count: 50_000_000).write(to: URL(fileURLWithPath: body))
        for _ in 0..<3 {
            let answer = try await curl([
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "content-type: application/json", "-H", "expect:",
                "--data-binary", "@" + body, "http://127.0.0.1:\(server.port)/api/v1/devices",
            ])
            #expect(answer.stdoutText == "413", "\(answer)")
        }
        #expect(server.isRunning)
    }
}
