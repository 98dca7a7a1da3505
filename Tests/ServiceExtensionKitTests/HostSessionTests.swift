// APNs Sandbox — ServiceExtensionKit: the host's session over pipes, in-process.

import Foundation
import Synchronization
import Testing

@testable import ServiceExtensionKit

#if canImport(Glibc)
    import Glibc
#endif

/// A session over two pipes: the test writes the sandbox's side of stdin and reads the extension's stdout.
final class PipedSession: Sendable {
    let session: HostSession
    let inputWriter: Int32
    let outputReader: Int32
    private let log = ExitLog()

    final class ExitLog: Sendable {
        let exits = Mutex<[HostExit]>([])
    }

    init() throws {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw TestFailure("pipe failed") }
        inputWriter = input[1]
        outputReader = output[0]
        session = HostSession(input: input[0], output: output[1]) { [log] exit in
            log.exits.withLock { $0.append(exit) }
        }
    }

    var recordedExits: [HostExit] { log.exits.withLock { $0 } }

    func send(_ line: String) {
        writeAll(inputWriter, Data((line + "\n").utf8))
    }

    func closeInput() { close(inputWriter) }

    func waitForExit(timeout: Double) -> HostExit? {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let first = recordedExits.first { return first }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return recordedExits.first
    }

    /// Everything written to the output so far (non-blocking).
    func readOutput() -> String {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        let flags = fcntl(outputReader, F_GETFL)
        _ = fcntl(outputReader, F_SETFL, flags | O_NONBLOCK)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(outputReader, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            data.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Records how it was called, and calls the handler as `behavior` says.
final class ScriptedExtension: UNNotificationServiceExtension, @unchecked Sendable {
    enum Behavior { case deliverTwice, deliverOnExpiry, never }

    let behavior: Behavior
    let calls = Mutex<[String]>([])
    /// The thread (`pthread_self()`) of each call. Not `Thread.current.name`: under load Foundation
    /// sometimes reports a dispatch worker's name for a thread it just named.
    let threads = Mutex<[UInt]>([])
    private let handler = Mutex<(@Sendable (UNNotificationContent) -> Void)?>(nil)
    private let best = Mutex<UNMutableNotificationContent?>(nil)

    init(_ behavior: Behavior) {
        self.behavior = behavior
        super.init()
    }

    override func didReceive(
        _ request: UNNotificationRequest,
        withContentHandler contentHandler: @escaping @Sendable (UNNotificationContent) -> Void
    ) {
        calls.withLock { $0.append("didReceive") }
        threads.withLock { $0.append(UInt(pthread_self())) }
        let content = request.content.mutableCopy() as? UNMutableNotificationContent
        content?.title = "[Processed] " + request.content.title
        handler.withLock { $0 = contentHandler }
        best.withLock { $0 = content }
        switch behavior {
        case .deliverTwice:
            if let content { contentHandler(content) }
            content?.title = "second"
            if let content { contentHandler(content) }
        case .deliverOnExpiry, .never:
            break
        }
    }

    override func serviceExtensionTimeWillExpire() {
        calls.withLock { $0.append("expire") }
        threads.withLock { $0.append(UInt(pthread_self())) }
        guard behavior == .deliverOnExpiry else { return }
        if let handler = handler.withLock({ $0 }), let content = best.withLock({ $0 }) {
            content.body = "best attempt"
            handler(content)
        }
    }
}

@Suite struct HostSessionTests {
    static let request = #"{"type":"request","identifier":"id-1","apnsId":"A","bundleId":"com.example.app","#
        + #""appGroup":"/tmp/group","locale":"de_DE","keys":{"com.example.app":"AAECAw=="},"#
        + #""content":{"title":"Hi","body":"There","userInfo":{"aps":{"mutable-content":1}}}}"#

    /// The first content is written once; a second call is ignored.
    @Test func firstContentWins() throws {
        let piped = try PipedSession()
        piped.send(Self.request)
        let (request, environment) = try piped.session.readRequest()
        #expect(request.identifier == "id-1")
        #expect(environment.locale.identifier == "de_DE")
        #expect(environment.appKey == Data([0, 1, 2, 3]))
        let instance = ScriptedExtension(.deliverTwice)
        piped.session.start(instance, request: request)
        #expect(piped.waitForExit(timeout: 5) == .delivered)
        Thread.sleep(forTimeInterval: 0.1)
        let lines = piped.readOutput().split(separator: "\n")
        #expect(lines.count == 1)
        let content = try #require(try jsonObject(String(lines[0]))["content"] as? [String: Any])
        #expect(content["title"] as? String == "[Processed] Hi")
        #expect(instance.calls.withLock { $0 } == ["didReceive"])
        let threads = instance.threads.withLock { $0 }
        #expect(threads.count == 1 && threads.first != UInt(pthread_self()), "didReceive on a thread of its own")
        piped.closeInput()
    }

    /// `timeWillExpire` calls `serviceExtensionTimeWillExpire()` on another thread; its content is written.
    @Test func timeWillExpireCallsTheExpiryHandler() throws {
        let piped = try PipedSession()
        piped.send(Self.request)
        let (request, _) = try piped.session.readRequest()
        let instance = ScriptedExtension(.deliverOnExpiry)
        piped.session.start(instance, request: request)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(piped.readOutput().isEmpty)
        piped.send(#"{"type":"timeWillExpire"}"#)
        piped.send(#"{"type":"timeWillExpire"}"#)
        #expect(piped.waitForExit(timeout: 5) == .delivered)
        Thread.sleep(forTimeInterval: 0.1)
        let output = piped.readOutput()
        let content = try #require(try jsonObject(output.trimmingCharacters(in: .newlines))["content"] as? [String: Any])
        #expect(content["body"] as? String == "best attempt")
        let calls = instance.calls.withLock { $0 }
        #expect(calls == ["didReceive", "expire"], "once, although timeWillExpire came twice")
        let threads = instance.threads.withLock { $0 }
        // didReceive's thread may have ended by then (and its pthread_t been reused), so only "not the
        // caller's thread" is checked for both.
        #expect(threads.count == 2 && !threads.contains(UInt(pthread_self())), "called on the session's own threads")
        piped.closeInput()
    }

    /// Input closing without content ends the session (exit 0) and writes nothing.
    @Test func inputClosedEndsTheSession() throws {
        let piped = try PipedSession()
        piped.send(Self.request)
        let (request, _) = try piped.session.readRequest()
        piped.session.start(ScriptedExtension(.never), request: request)
        piped.send(#"{"type":"somethingNew"}"#)
        piped.closeInput()
        #expect(piped.waitForExit(timeout: 5) == .inputClosed)
        #expect(HostExit.inputClosed.status == 0)
        #expect(piped.readOutput().isEmpty)
    }

    /// No request, or a line that is not one: an error.
    @Test func missingOrBadRequestThrows() throws {
        let closed = try PipedSession()
        closed.closeInput()
        #expect(throws: WireFormat.ProtocolError.self) { try closed.session.readRequest() }

        let wrong = try PipedSession()
        wrong.send(#"{"type":"timeWillExpire"}"#)
        #expect(throws: WireFormat.ProtocolError.self) { try wrong.session.readRequest() }
        wrong.closeInput()
    }

    /// `log` writes a `{"type":"log"}` line before the content, nothing after.
    @Test func logLinesPrecedeTheContent() throws {
        let piped = try PipedSession()
        piped.send(Self.request)
        let (request, _) = try piped.session.readRequest()
        piped.session.log("step one")
        piped.session.start(ScriptedExtension(.deliverTwice), request: request)
        #expect(piped.waitForExit(timeout: 5) == .delivered)
        piped.session.log("too late")
        Thread.sleep(forTimeInterval: 0.1)
        let lines = piped.readOutput().split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(try jsonObject(lines[0])["message"] as? String == "step one")
        #expect(try jsonObject(lines[1])["type"] as? String == "content")
        piped.closeInput()
    }
}
