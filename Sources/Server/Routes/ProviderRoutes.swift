// APNs Sandbox — the APNs provider endpoint (placeholder until Apple's full contract lands).
import HTTP
import Support

/// `POST /3/device/{token}`: answers 200 with an `apns-id` (the client's, if it is a UUID,
/// else a fresh lowercase one) and no body, as APNs does for an accepted push.
enum ProviderRoutes {
    static func register(on router: inout Router) {
        router.post("/3/device/{token}") { request, _ in
            let apnsID = request.headers["apns-id"].flatMap { UUIDGenerator.isCanonical($0) ? $0.lowercased() : nil }
                ?? UUIDGenerator.make()
            return .response(HTTPResponse(status: 200, headers: ["apns-id": apnsID]))
        }
    }
}
