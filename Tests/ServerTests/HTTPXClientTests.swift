// APNs Sandbox — the README's httpx example (PyPI `httpx[http2]`), over TLS and h2c.
import Foundation
import Testing

@Suite struct HTTPXClientTests {
    /// Both pushes of the README's httpx snippet go over HTTP/2 and get 200 with an apns-id.
    @Test func readmeExampleWorks() async throws {
        try await withServer { server in
            let output = try await run("/usr/bin/env", args: [
                "python3", TestPaths.packageRoot + "/Tests/Python/httpx_client.py", "--token", server.providerToken,
                "--tls-port", "\(server.tlsPort)", "--http-port", "\(server.httpPort)", "--ca", server.caPath,
                "--device", deviceToken, "--topic", testTopic,
            ], timeout: 40)
            try #require(output.status == 0, "\(output)")
            let lines = output.stdoutText.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(lines.count == 2, "\(output)")
            for line in lines {
                #expect(line.count == 3 && line[0] == "HTTP/2" && line[1] == "200" && isLowercaseUUID(line[2]), "\(line)")
            }
        }
    }
}
