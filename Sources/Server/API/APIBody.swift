// APNs Sandbox — request bodies of the REST API: strict JSON decoding and the checks shared by routes.
import APNsProtocol
import ExtensionRuntime
import Foundation
import Sandbox

/// A JSON request body of the API: the fields it knows (any other is an error that names it).
protocol APIRequestBody: Decodable {
    static var fields: [String] { get }
}

/// Request-body helpers: decoding with clear 400/422 problems.
enum APIBody {
    /// Decodes `body` as `T`: 400 `invalid_json` (with where) for what is not JSON, 400 `unknown_field`
    /// naming a member `T` does not know (a typo must not be ignored: `"evnts"` would subscribe to every
    /// event), 400 `invalid_field` naming one of the wrong type.
    static func decode<T: APIRequestBody>(_ type: T.Type, from body: [UInt8], allowEmpty: Bool) throws -> T? {
        if body.isEmpty {
            if allowEmpty { return nil }
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        let tree: JSON
        do {
            tree = try JSON.parse(body)
        } catch {
            throw APIError(status: 400, code: "invalid_json", message: "The body is not valid JSON: \(error)")
        }
        guard let members = tree.members else {
            throw APIError(status: 400, code: "invalid_json", message: "The body must be a JSON object")
        }
        if let unknown = members.first(where: { !T.fields.contains($0.0) }) {
            throw APIError(
                status: 400, code: "unknown_field",
                message: "Unknown field \"\(unknown.0)\" (known: \(T.fields.joined(separator: ", ")))")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            if let unfit = UnfitNumber.find(in: tree, decodes: { (try? JSONDecoder().decode(T.self, from: Data($0.serialized.utf8))) != nil }) {
                throw APIError(
                    status: 400, code: "invalid_field", message: "Field \(unfit.path): \(unfit.number) must be a whole number")
            }
            throw APIError(status: 400, code: "invalid_json", message: "The body is not JSON of the expected shape")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context),
                let DecodingError.keyNotFound(_, context), let DecodingError.dataCorrupted(context) {
            let path = KeyPathText.text(context.codingPath)
            throw APIError(
                status: 400, code: path.isEmpty ? "invalid_json" : "invalid_field",
                message: path.isEmpty ? "The body is not JSON of the expected shape" : "Field \(path) has the wrong type")
        } catch {
            throw APIError(status: 400, code: "invalid_json", message: "The body is not valid JSON")
        }
    }

    static func environment(_ text: String) throws -> APNsEnvironment {
        guard let environment = APNsEnvironment(rawValue: text) else {
            throw APIError(status: 422, code: "invalid_environment", message: "environment must be development or production")
        }
        return environment
    }

    static func locale(_ text: String) throws -> String {
        let valid = !text.isEmpty && text.count <= 35 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        guard valid else { throw APIError(status: 422, code: "invalid_locale", message: "locale must look like en_US or fr") }
        return text
    }

    static func bundleIDs(_ ids: [String]) throws -> [String] {
        for id in ids {
            let valid = !id.isEmpty && id.utf8.count <= 255
                && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
            guard valid else {
                throw APIError(status: 422, code: "invalid_bundle_id", message: "Bundle IDs are 1–255 characters of A–Z a–z 0–9 . -")
            }
        }
        return ids
    }

    static func keys(_ keys: [String: String]) throws -> [String: String] {
        for (bundleID, key) in keys {
            _ = try bundleIDs([bundleID])
            guard let bytes = Data(base64Encoded: key), [16, 24, 32].contains(bytes.count) else {
                throw APIError(status: 422, code: "invalid_key", message: "keys.\(bundleID) must be a base64 AES key (16, 24 or 32 bytes)")
            }
        }
        return keys
    }

    /// A service extension configuration the runtime accepts (422 naming the bad key otherwise) and the
    /// API may set: an `exec` program must be allowed by `execPolicy`, and its environment is the
    /// configuration file's to give (403 otherwise: `LD_PRELOAD` and the like would run any code).
    static func serviceExtensionText(_ value: JSON, execPolicy: ExecPolicy) throws -> String {
        let text = value.serialized
        let configuration: ExtensionConfiguration
        do {
            configuration = try ExtensionConfiguration(json: text)
        } catch {
            throw APIError(status: 422, code: "invalid_service_extension", message: "\(error)")
        }
        if case .exec(let settings) = configuration.kind {
            if !settings.environment.isEmpty {
                throw APIError(
                    status: 403, code: "exec_not_allowed",
                    message: "The environment of an exec extension can only be set in the configuration file")
            }
            if let problem = execPolicy.problem(running: settings.path) {
                throw APIError(status: 403, code: "exec_not_allowed", message: problem)
            }
        }
        return text
    }
}
