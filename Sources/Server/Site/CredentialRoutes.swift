// APNs Sandbox — minting client certificates over the API.
import Crypto
import Foundation
import HTTP

/// `POST /api/v1/apps/{bundleId}/client-certificates`: issues an APNs-style client certificate
/// for the app, signed by the sandbox CA. Body (optional JSON): `{"topics": [...],
/// "environment": "development"|"production"|"both", "validityDays": 365}`. Answers 201 with
/// `{"bundleId", "topics", "environment", "certificatePem", "privateKeyPem"}`.
enum CredentialRoutes {
    struct Request: APIRequestBody {
        static let fields = ["topics", "environment", "validityDays"]

        var topics: [String]?
        var environment: String?
        var validityDays: Int?
    }

    struct Issued: Encodable {
        var bundleId: String
        var topics: [String]
        var environment: String
        var certificatePem: String
        var privateKeyPem: String
    }

    static func register(on router: inout Router, dataDirectory: String) {
        router.post("/api/v1/apps/{bundleId}/client-certificates") { request, parameters in
            // Reads the CA key from disk and signs: a worker thread's job, not an event loop's.
            .blocking { try issue(bundleID: parameters["bundleId"] ?? "", body: request.body, dataDirectory: dataDirectory) }
        }
    }

    static func issue(bundleID: String, body: [UInt8], dataDirectory: String) throws -> HTTPResponse {
        let body = try APIBody.decode(Request.self, from: body, allowEmpty: true) ?? Request()
        guard let environment = CertificateEnvironment(rawValue: body.environment ?? "both") else {
            throw APIError(status: 422, code: "invalid_environment", message: "environment must be development, production or both")
        }
        var certificateRequest = ClientCertificateRequest(bundleID: bundleID, topics: body.topics, environment: environment)
        if let days = body.validityDays { certificateRequest.validityDays = days }
        do {
            let issued = try CertificateAuthority.issueClientCertificate(in: dataDirectory, request: certificateRequest)
            return .json(status: 201, encoding: Issued(
                bundleId: bundleID, topics: certificateRequest.effectiveTopics, environment: environment.rawValue,
                certificatePem: issued.certificatePEM, privateKeyPem: issued.privateKeyPEM))
        } catch let error as CryptoError {
            throw APIError(status: 422, code: "invalid_request", message: error.description)
        }
    }
}
