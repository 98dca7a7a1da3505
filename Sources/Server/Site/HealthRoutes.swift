// APNs Sandbox — liveness, readiness and the CA certificate.
import APNsProtocol
import HTTP

/// `GET /healthz`, `GET /readyz`, `GET /ca.pem`.
///
/// `/healthz` is liveness: 200 while the process serves HTTP. `/readyz` is readiness: 200
/// `{"status":"ready"}`; 503 `{"status":"draining"}` before the start and during shutdown; 503
/// `{"status":"not-ready","reason":"store: database or disk is full"}` while a readiness check fails
/// (writes to a store fail, or a store file is damaged), and 200 again once it passes.
enum HealthRoutes {
    static func register(on router: inout Router, state: ServerState, caCertificatePEM: [UInt8]) {
        router.get("/healthz") { _, _ in
            .response(.json(Array(#"{"status":"ok"}"#.utf8)))
        }
        router.get("/readyz") { _, _ in
            guard state.isReady else {
                return .response(.json(status: 503, Array(#"{"status":"draining"}"#.utf8)))
            }
            if let reason = state.notReadyReason {
                var writer = JSONWriter(reservingCapacity: 64 + reason.utf8.count)
                writer.member("status", "not-ready")
                writer.member("reason", reason)
                return .response(.json(status: 503, writer.finish()))
            }
            return .response(.json(Array(#"{"status":"ready"}"#.utf8)))
        }
        router.get("/ca.pem") { _, _ in
            var response = HTTPResponse(status: 200, body: caCertificatePEM)
            response.headers.set("content-type", "application/x-pem-file")
            response.headers.set("content-disposition", "attachment; filename=\"apns-sandbox-ca.pem\"")
            return .response(response)
        }
    }
}
