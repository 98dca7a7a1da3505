// APNs Sandbox — the sandbox's own HTTP stack on 127.0.0.1, as the server the HTTP client tests talk to.
import Crypto
import Dispatch
import Foundation
import HTTP
import Support
import Synchronization
import Transport

/// A TCPServer + HTTPPipeline on one event loop and an ephemeral port, cleartext and (optionally) TLS with
/// certificates from a fresh local CA, answering:
///
/// - `GET /small`: 64 bytes; `GET /bytes/<n>`: n bytes (gzipped when asked and n ≥ 1 KiB);
/// - `POST /echo`: 200 with the request body; `POST /hook`: 204 (a webhook receiver); `GET|POST /inspect`: the method, the headers and the body
///   size as text;
/// - `GET /redirect/<n>`: a 302 to `/redirect/<n-1>`, and `/redirect/0` is `/small`; `POST /see-other`: a
///   303 to `/inspect`;
/// - `GET /slow/<ms>`: `/small` after that many milliseconds (a deferred response, the loop stays free);
/// - `GET /status/<code>`: that status, empty body.
final class LoopbackServer: Sendable {
    let port: Int
    let tlsPort: Int?
    /// The CA the TLS listener's certificate is issued by.
    let caFile: String?
    private let server: TCPServer
    private let group: EventLoopGroup
    private let directory: String

    init(tls: Bool = false) throws {
        directory = NSTemporaryDirectory() + "http-client-tests-" + UUID().uuidString
        var listeners = [ListenerConfiguration(name: "plain", host: "127.0.0.1", port: 0)]
        if tls {
            let files = try CertificateAuthority.ensureServerCertificate(in: directory + "/tls")
            let context = try TLSContext(certificateChainFile: files.certificateChain, privateKeyFile: files.privateKey)
            listeners.append(ListenerConfiguration(name: "tls", host: "127.0.0.1", port: 0, tls: context))
            caFile = files.caCertificate
        } else {
            caFile = nil
        }
        var options = HTTPServerOptions()
        options.maxBodyBytes = 8 << 20
        let pipeline = HTTPPipeline(responder: Self.router(), options: options, logger: Logger(label: "loopback", level: .error))
        group = try EventLoopGroup(count: 1)
        server = TCPServer(
            configuration: TCPServer.Configuration(listeners: listeners), loops: group.loops,
            factory: HTTPConnectionFactory(pipeline: pipeline), logger: Logger(label: "loopback", level: .error))
        let bound = try server.start()
        port = bound[0].port
        tlsPort = bound.count > 1 ? bound[1].port : nil
    }

    deinit {
        server.shutdown(gracePeriodNanoseconds: 200_000_000)
        group.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The TLS listener's URL, by the name its certificate carries.
    func tlsURL(_ path: String) -> String { "https://localhost:\(tlsPort ?? 0)\(path)" }

    static let small = [UInt8](repeating: UInt8(ascii: "s"), count: 64)

    private static func router() -> Router {
        var router = Router()
        router.get("/small") { _, _ in .response(HTTPResponse(status: 200, body: small)) }
        router.get("/bytes/{count}") { _, parameters in
            let count = Int(parameters["count"] ?? "") ?? 0
            return .response(HTTPResponse(status: 200, headers: ["content-type": "text/plain"],
                                          body: (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }))
        }
        router.post("/echo") { request, _ in .response(HTTPResponse(status: 200, body: request.body)) }
        router.post("/hook") { _, _ in .response(HTTPResponse(status: 204)) }
        router.any("/inspect") { request, _ in
            var lines = ["method=\(request.method)", "body=\(request.body.count)"]
            for field in request.headers { lines.append("\(field.name.lowercased())=\(field.value)") }
            return .response(.text(lines.joined(separator: "\n")))
        }
        router.get("/redirect/{left}") { _, parameters in
            let left = Int(parameters["left"] ?? "") ?? 0
            let next = left > 0 ? "/redirect/\(left - 1)" : "/small"
            return .response(HTTPResponse(status: 302, headers: ["location": next]))
        }
        router.post("/see-other") { _, _ in .response(HTTPResponse(status: 303, headers: ["location": "/inspect"])) }
        router.get("/slow/{milliseconds}") { _, parameters in
            let delay = Int(parameters["milliseconds"] ?? "") ?? 0
            return .deferred { respond in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
                    respond(HTTPResponse(status: 200, body: small))
                }
            }
        }
        router.get("/status/{code}") { _, parameters in
            .response(HTTPResponse(status: Int(parameters["code"] ?? "") ?? 500))
        }
        return router
    }
}
