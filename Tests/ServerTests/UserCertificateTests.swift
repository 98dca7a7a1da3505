// APNs Sandbox — serving TLS with a certificate the user brings.
import Foundation
import Testing

@Suite struct UserCertificateTests {
    /// With `tls.certificateFile`/`privateKeyFile` set, the TLS listener presents that certificate:
    /// a client trusting only it connects, and it is not the generated one.
    @Test func servesUserSuppliedCertificate() async throws {
        let directory = try makeTemporaryDirectory("user-cert")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = directory + "/mine.pem"
        let key = directory + "/mine-key.pem"
        let generated = try await run("/usr/bin/openssl", args: [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
        ])
        try #require(generated.status == 0, "openssl failed: \(generated)")

        try await withServer(configure: { configuration in
            configuration.tls.certificateFile = certificate
            configuration.tls.privateKeyFile = key
        }) { server in
            let url = "\(server.tlsBase)/healthz"
            let trusted = try await curl(server.curlResolve + ["--http2", "--cacert", certificate, url])
            #expect(trusted.status == 0, "curl trusting the user certificate failed: \(trusted)")
            #expect(trusted.stdoutText.contains("\"ok\""))
            // The sandbox CA did not issue it, so a client trusting only the CA refuses it.
            let caOnly = try await curl(server.curlResolve + ["--http2", "--cacert", server.caPath, url])
            #expect(caOnly.status != 0, "the generated certificate was served instead of the user's")
        }
    }
}
