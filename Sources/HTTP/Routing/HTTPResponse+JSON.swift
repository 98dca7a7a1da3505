// APNs Sandbox — JSON response helpers.
import Foundation
import Support

extension HTTPResponse {
    /// A JSON response from raw UTF-8 bytes.
    public static func json(status: Int = 200, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["content-type": "application/json"], body: body)
    }

    /// A JSON response encoding `value` (sorted keys, ISO 8601 dates).
    public static func json<T: Encodable>(status: Int = 200, encoding value: T) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(value) else {
            return jsonError(status: 500, code: "encoding_failed", message: "Response could not be encoded")
        }
        return json(status: status, Array(data))
    }

    /// The sandbox's own error shape: `{"error":{"code":…,"message":…}}`.
    public static func jsonError(status: Int, code: String, message: String) -> HTTPResponse {
        json(status: status, Array("{\"error\":{\"code\":\(JSONString.quoted(code)),\"message\":\(JSONString.quoted(message))}}".utf8))
    }

    /// A plain-text response.
    public static func text(status: Int = 200, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: ["content-type": contentType], body: Array(text.utf8))
    }
}

