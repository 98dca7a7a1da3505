// APNs Sandbox — request bodies: unknown fields are errors that name them.
import Foundation
@testable import Server
import Testing

@Suite struct APIBodyTests {
    /// Each body type's list of fields is exactly its properties (so no field is refused or let through by mistake).
    @Test func fieldListsMatchTheProperties() throws {
        func properties<T: APIRequestBody>(_ type: T.Type) throws -> Set<String> {
            let empty = try JSONDecoder().decode(T.self, from: Data("{}".utf8))
            return Set(Mirror(reflecting: empty).children.compactMap(\.label))
        }
        #expect(try properties(CreateDeviceRequest.self) == Set(CreateDeviceRequest.fields))
        #expect(try properties(UpdateDeviceRequest.self) == Set(UpdateDeviceRequest.fields))
        #expect(try properties(AppRequest.self) == Set(AppRequest.fields))
        #expect(try properties(RotateSecretRequest.self) == Set(RotateSecretRequest.fields))
        #expect(try properties(CredentialRoutes.Request.self) == Set(CredentialRoutes.Request.fields))
        let webhook = try JSONDecoder().decode(CreateWebhookRequest.self, from: Data(#"{"url":"http://x"}"#.utf8))
        #expect(Set(Mirror(reflecting: webhook).children.compactMap(\.label)) == Set(CreateWebhookRequest.fields))
    }

    /// A typo in a field is 400 unknown_field naming it, and nothing is created or changed; a field of the
    /// wrong type names its path as written (`apps[1]`).
    @Test func unknownFieldsAreErrorsThatNameThem() async throws {
        try await withServer { server in
            let base = server.httpBase + "/api/v1"
            let cases: [(String, String, String, String)] = [
                ("POST", "/devices", #"{"aps":["com.example.app"]}"#, "aps"),
                ("PATCH", "/devices/\(deviceToken)", #"{"onlin":false}"#, "onlin"),
                ("PATCH", "/apps/\(testTopic)", #"{"serviceExtenson":{"kind":"builtin"}}"#, "serviceExtenson"),
                ("POST", "/apps", #"{"bundleId":"com.x","teamId":"T","string":{}}"#, "string"),
                ("POST", "/webhooks", #"{"url":"http://127.0.0.1:9/x","evnts":["push.accepted"]}"#, "evnts"),
                ("POST", "/apps/\(testTopic)/client-certificates", #"{"environement":"production"}"#, "environement"),
            ]
            _ = try await pushAlert(server)
            for (method, path, body, field) in cases {
                let answer = try await apiRequest(method, base + path, body)
                #expect(answer.status == 400, "\(method) \(path): \(answer)")
                let error = answer.json?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "unknown_field")
                #expect((error?["message"] as? String)?.contains("\"\(field)\"") == true, "\(error ?? [:])")
            }
            let hooks = try await apiRequest("GET", base + "/webhooks")
            #expect((hooks.json?["webhooks"] as? [Any])?.isEmpty == true)
            let device = try await apiRequest("GET", base + "/devices/\(deviceToken)")
            #expect(device.json?["online"] as? Bool == true)

            let fraction = try await apiRequest(
                "POST", base + "/webhooks", #"{"url":"http://127.0.0.1:9/x","maxConcurrentDeliveries":1.5}"#)
            #expect(fraction.status == 400)
            let fractionMessage = (fraction.json?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(fractionMessage.contains("maxConcurrentDeliveries: 1.5 must be a whole number"), "\(fractionMessage)")
            let wrongType = try await apiRequest("POST", base + "/devices", #"{"apps":["com.a",7]}"#)
            #expect(wrongType.status == 400)
            let message = (wrongType.json?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("apps[1]") && !message.contains("Index"), "\(message)")
        }
    }
}

/// API writes that race each other.
@Suite struct APIConcurrencyTests {
    /// Two creations of one device token at once: exactly one 201, the other 409.
    @Test func concurrentCreationsOfOneDeviceGiveOne201() async throws {
        try await withServer { server in
            for round in 0..<10 {
                let token = String(format: "%02x", round) + String(repeating: "9f", count: 31)
                let body = #"{"token":"\#(token)","apps":["\#(testTopic)"]}"#
                async let first = apiRequest("POST", server.httpBase + "/api/v1/devices", body)
                async let second = apiRequest("POST", server.httpBase + "/api/v1/devices", body)
                let statuses = try await [first.status, second.status].sorted()
                #expect(statuses == [201, 409], "round \(round): \(statuses)")
            }
        }
    }

    /// Two PATCHes of one app at once, changing different fields: both changes are kept.
    @Test func concurrentAppChangesAreBothKept() async throws {
        try await withServer { server in
            let url = server.httpBase + "/api/v1/apps/\(testTopic)"
            for round in 0..<10 {
                _ = try await apiRequest("PATCH", url, #"{"strings":{},"serviceExtension":null}"#)
                async let strings = apiRequest("PATCH", url, #"{"strings":{"en":{"K":"v\#(round)"}}}"#)
                async let extensionChange = apiRequest(
                    "PATCH", url, #"{"serviceExtension":{"kind":"builtin","steps":[{"step":"rewrite","title":"r\#(round)"}]}}"#)
                _ = try await (strings, extensionChange)
                let app = try await apiRequest("GET", url).json ?? [:]
                #expect((app["strings"] as? [String: [String: String]])?["en"]?["K"] == "v\(round)", "round \(round): \(app)")
                #expect(app["serviceExtension"] != nil, "round \(round): \(app)")
            }
        }
    }
}
