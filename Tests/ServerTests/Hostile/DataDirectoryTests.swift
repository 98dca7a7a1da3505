// APNs Sandbox — a second server on a data directory in use.
import Foundation
import Glibc
import Server
import Support
import Testing

@Suite struct HostileDataDirectoryTests {
    /// A second server on the data directory of a running one refuses to start (naming the holder) and
    /// touches nothing: the first keeps serving; once it has shut down, the directory can be used again.
    @Test func secondServerOnADirectoryInUseRefusesToStart() async throws {
        let data = try makeTemporaryDirectory("locked")
        defer { try? FileManager.default.removeItem(atPath: data) }
        var configuration: SandboxConfiguration?
        try await withServer(configure: { $0.dataDirectory = data }) { server in
            configuration = server.configuration
            let logger = Logger(label: "second", level: .error, sink: .capturing())
            do {
                _ = try SandboxServer(configuration: server.configuration, logger: logger)
                Issue.record("a second server started on a data directory in use")
            } catch {
                let message = "\(error)"
                let expected = "is in use by another apns-sandbox (pid \(getpid()))"
                #expect(message.contains(expected), "\(message)")
            }
            let apnsID = try await pushAlert(server)
            #expect(!apnsID.isEmpty, "the running server was disturbed")
        }
        var configured = try #require(configuration)
        configured.teams = []  // their key file was in the first server's temporary directory
        let later = try SandboxServer(configuration: configured, logger: Logger(label: "later", level: .error, sink: .capturing()))
        later.shutdown()
    }
}
