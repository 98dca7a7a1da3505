// APNs Sandbox — the command line as a user meets it: help and errors.
import Foundation
import Testing

@Suite struct CommandLineTests {
    /// `<command> --help` prints that command's usage (exit 0), not the global one; a bad option prints the
    /// command's usage with the error (exit 2).
    @Test func commandHelpIsTheCommandsOwn() async throws {
        let binary = try GracefulShutdownTests.executable()
        for (command, option) in [("serve", "--http-port"), ("token", "--key-id"), ("client-cert", "--bundle-id"),
                                  ("healthcheck", "--url")] {
            let help = try await run(binary, args: [command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdoutText.hasPrefix("usage: apns-sandbox \(command) "), "\(command): \(help)")
            #expect(help.stdoutText.contains(option))
            let others = ["serve", "token", "client-cert", "healthcheck"].filter { $0 != command }
            #expect(!others.contains { help.stdoutText.contains("\n  \($0) ") }, "\(command) shows other commands")
            let bad = try await run(binary, args: [command, "--nope", "x"])
            #expect(bad.status == 2)
            #expect(bad.stderrText.contains("unknown option --nope") && bad.stderrText.contains("apns-sandbox \(command)"))
        }
        let global = try await run(binary, args: ["--help"])
        #expect(global.status == 0 && global.stdoutText.contains("client-cert") && global.stdoutText.contains("serve"))
    }
}
