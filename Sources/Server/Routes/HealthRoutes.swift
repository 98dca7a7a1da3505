// APNs Sandbox — liveness, readiness and the CA certificate.
import HTTP

/// `GET /healthz`, `GET /readyz`, `GET /ca.pem`.
enum HealthRoutes {
    static func register(on router: inout Router, state: ServerState, caCertificatePEM: [UInt8]) {
        router.get("/healthz") { _, _ in
            .response(.json(Array(#"{"status":"ok"}"#.utf8)))
        }
        router.get("/readyz") { _, _ in
            if state.isReady {
                return .response(.json(Array(#"{"status":"ready"}"#.utf8)))
            }
            return .response(.json(status: 503, Array(#"{"status":"draining"}"#.utf8)))
        }
        router.get("/ca.pem") { _, _ in
            var response = HTTPResponse(status: 200, body: caCertificatePEM)
            response.headers.set("content-type", "application/x-pem-file")
            response.headers.set("content-disposition", "attachment; filename=\"apns-sandbox-ca.pem\"")
            return .response(response)
        }
    }
}
