// APNs Sandbox — end to end: the CA endpoint, the certificate chain, 404 and 405.
import Foundation
import TestProcessSupport
import Testing

@Suite(.scaledTimeLimit(minutes: 1))
struct EndpointTests {
    /// GET /ca.pem returns the bytes of `<data>/ca.pem` on the cleartext port (HTTP/1.1, h2c) and the TLS port (h2).
    @Test func caPEMIsServedOnBothPorts() async throws {
        try await withServer { server in
            let expected = try #require(FileManager.default.contents(atPath: server.dataDirectory + "/ca.pem"))
            #expect(String(decoding: expected, as: UTF8.self).hasPrefix("-----BEGIN CERTIFICATE-----"))
            let runs: [(String, [String])] = [
                ("cleartext HTTP/1.1", ["--http1.1", "\(server.httpBase)/ca.pem"]),
                ("h2c", ["--http2-prior-knowledge", "\(server.httpBase)/ca.pem"]),
                ("TLS h2", server.curlResolve + ["--http2", "--cacert", server.caPath, "\(server.tlsBase)/ca.pem"]),
                ("TLS HTTP/1.1", server.curlResolve + ["--http1.1", "--cacert", server.caPath, "\(server.tlsBase)/ca.pem"]),
            ]
            for (name, args) in runs {
                let output = try await curl(["--fail"] + args)
                #expect(output.status == 0, "\(name): \(output)")
                #expect(output.stdout == expected, "\(name): served CA differs from \(server.dataDirectory)/ca.pem")
            }
            let head = try await curl(["--http1.1", "-D", "-", "-o", "/dev/null", "\(server.httpBase)/ca.pem"])
            let response = try #require(CurlResponse(head.stdout), "\(head)")
            #expect(response.header("content-type") == "application/x-pem-file")
        }
    }

    /// The generated server certificate verifies against the generated CA (file and live TLS handshake).
    @Test func serverCertificateVerifiesAgainstCA() async throws {
        try await withServer { server in
            let verify = try await run("openssl", args: ["verify", "-CAfile", server.caPath, server.certificateChainPath])
            #expect(verify.status == 0, "\(verify)")
            #expect(verify.stdoutText.contains(": OK"), "\(verify)")

            let handshake = try await run("openssl", args: [
                "s_client", "-connect", "127.0.0.1:\(server.tlsPort)", "-servername", "localhost",
                "-CAfile", server.caPath, "-verify_return_error", "-verify_hostname", "localhost",
                "-alpn", "h2",
            ], stdin: Data())
            #expect(handshake.status == 0, "\(handshake)")
            #expect(handshake.stdoutText.contains("Verify return code: 0 (ok)"), "\(handshake)")
            #expect(handshake.stdoutText.contains("ALPN protocol: h2"), "\(handshake)")
        }
    }

    /// An unknown path is 404 with `{"error":{"code":"not_found",…}}` over HTTP/1.1 and HTTP/2.
    @Test func unknownPathIs404JSON() async throws {
        try await withServer { server in
            for flag in ["--http1.1", "--http2-prior-knowledge"] {
                let output = try await curl([flag, "-D", "-", "\(server.httpBase)/no/such/path"])
                let response = try #require(CurlResponse(output.stdout), "\(output)")
                #expect(response.status == 404, "\(flag)")
                #expect(response.header("content-type") == "application/json")
                #expect(errorCode(response.body) == "not_found", "\(flag): \(response.bodyText)")
                let message = (jsonObject(response.body)?["error"] as? [String: Any])?["message"] as? String
                #expect(message?.contains("/no/such/path") == true, "\(response.bodyText)")
            }
        }
    }

    /// GET on the push endpoint is 405 with `allow: POST` and a JSON error (APNs' `MethodNotAllowed`).
    @Test func getOnPushEndpointIs405WithAllow() async throws {
        try await withServer { server in
            for flag in ["--http1.1", "--http2-prior-knowledge"] {
                let output = try await curl([flag, "-D", "-", "\(server.httpBase)/3/device/x"])
                let response = try #require(CurlResponse(output.stdout), "\(output)")
                #expect(response.status == 405, "\(flag)")
                // RFC 9110 §15.5.6: a 405 MUST carry Allow with the supported methods.
                #expect(response.header("allow") == "POST", "\(flag): \(response.headers)")
                // APNs' shape {"reason":"MethodNotAllowed"} (or the router's {"error":{"code":…}}).
                let reason = jsonObject(response.body)?["reason"] as? String
                #expect(reason == "MethodNotAllowed" || errorCode(response.body) == "method_not_allowed",
                        "\(flag): \(response.bodyText)")
            }
        }
    }
}
