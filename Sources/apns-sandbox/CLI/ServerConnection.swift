// APNs Sandbox — the CLI's way to a running sandbox: its URL, the admin token, requests and answers.
import Foundation
import HTTPClient
import Support
import Synchronization

/// A running sandbox as the command line reaches it: `--url` (or `APNS_SANDBOX_URL`), the admin token
/// (`--admin-token-file`, else `APNS_SANDBOX_ADMIN_TOKEN`, else `<data-dir>/admin-token` when it exists), the
/// CA an https:// URL is checked with (`--ca`, else `<data-dir>/ca.pem` when it exists) and the project's
/// one HTTP client (``HTTPClient``), used synchronously.
struct ServerConnection: Sendable {
    /// `http://host:port`, without a trailing slash.
    let baseURL: String
    let adminToken: String?
    let timeoutMilliseconds: Int64
    private let client: HTTPClient

    /// - Parameter url: Another address than `--url` (the provider API's TLS listener).
    init(
        _ arguments: ParsedArguments, url given: String? = nil,
        clientCertificate: (String, String)? = nil
    ) throws {
        let environment = ProcessInfo.processInfo.environment
        var url = given ?? arguments.value("--url") ?? environment["APNS_SANDBOX_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "http://127.0.0.1:8080"
        while url.hasSuffix("/") { url.removeLast() }
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw UsageError("--url must be an http:// or https:// URL, not \(url)")
        }
        baseURL = url
        adminToken = try Self.adminToken(arguments, environment: environment)
        let seconds = try arguments.seconds("--timeout") ?? 30
        timeoutMilliseconds = max(1, Int64(seconds * 1000))
        var configuration = HTTPClient.Configuration(threadName: "cli-http", maxConnections: 4, caFile: try Self.caFile(arguments))
        // A sandbox on this machine is never reached through a proxy from the environment.
        let host = parsed.host ?? ""
        configuration.usesProxyEnvironment = !(host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]")
        configuration.clientCertificate = clientCertificate.map { .init(certificateFile: $0.0, privateKeyFile: $0.1) }
        client = HTTPClient(configuration: configuration)
    }

    private static func adminToken(_ arguments: ParsedArguments, environment: [String: String]) throws -> String? {
        if let file = arguments.value("--admin-token-file") {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw UsageError("cannot read the admin token file \(file)")
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw UsageError("the admin token file \(file) is empty") }
            return token
        }
        if let token = environment["APNS_SANDBOX_ADMIN_TOKEN"], !token.isEmpty { return token }
        guard let data = FileManager.default.contents(atPath: dataDirectory(arguments) + "/admin-token") else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }

    /// `--ca` (which must be readable), else `<data-dir>/ca.pem` when it exists, else nil (the system's CAs).
    static func caFile(_ arguments: ParsedArguments) throws -> String? {
        if let file = arguments.value("--ca") {
            guard FileManager.default.isReadableFile(atPath: file) else { throw UsageError("cannot read the CA file \(file)") }
            return file
        }
        let file = dataDirectory(arguments) + "/ca.pem"
        return FileManager.default.isReadableFile(atPath: file) ? file : nil
    }

    /// `--data-dir`, else `APNS_SANDBOX_DATA_DIR`, else `./data`.
    static func dataDirectory(_ arguments: ParsedArguments) -> String {
        arguments.value("--data-dir")
            ?? ProcessInfo.processInfo.environment["APNS_SANDBOX_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "./data"
    }

    /// Sends a request to `path` (under ``baseURL``) and waits for the answer; a failure to get one is a
    /// ``CommandFailure``.
    func send(
        _ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [], admin: Bool = true,
        atLeastMilliseconds: Int64 = 0
    ) throws -> HTTPClient.Response {
        var headers = headers
        if admin, let adminToken { headers.append(("authorization", "Bearer \(adminToken)")) }
        if body != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headers.append(("content-type", "application/json"))
        }
        let request = HTTPClient.Request(
            url: baseURL + path, method: method, headers: headers, body: body, timeoutMilliseconds: max(timeoutMilliseconds, atLeastMilliseconds),
            maxResponseBytes: 256 << 20)
        let result = Locked<Result<HTTPClient.Response, HTTPClient.Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        client.send(request) { answer in
            result.withLock { $0 = answer }
            done.signal()
        }
        done.wait()
        switch result.withLock({ $0 }) {
        case .success(let response): return response
        case .failure(let failure): throw CommandFailure("\(method) \(baseURL)\(path): \(failure)")
        case nil: throw CommandFailure("\(method) \(baseURL)\(path): no answer")
        }
    }

    /// Starts a GET of `path` whose body arrives in chunks (`onChunk`, on the HTTP client's thread) for as
    /// long as the server sends it (`--timeout` bounds it only when given); `completion` runs once at its end.
    func stream(
        _ path: String, headers: [(String, String)] = [], explicitTimeout: Bool,
        onChunk: @escaping @Sendable ([UInt8]) -> Void,
        completion: @escaping @Sendable (Result<HTTPClient.Response, HTTPClient.Failure>) -> Void
    ) -> HTTPClient.Handle {
        var headers = headers + [("accept", "text/event-stream")]
        if let adminToken { headers.append(("authorization", "Bearer \(adminToken)")) }
        var request = HTTPClient.Request(
            url: baseURL + path, headers: headers,
            // Ten years: an event stream has no end of its own.
            timeoutMilliseconds: explicitTimeout ? timeoutMilliseconds : 315_360_000_000,
            connectTimeoutMilliseconds: min(timeoutMilliseconds, 10_000), destination: .discard)
        request.onChunk = onChunk
        return client.send(request, completion: completion)
    }

    /// A REST call whose answer must be 2xx: the body (JSON). An error answer becomes a ``CommandFailure``
    /// with the server's `error.message`.
    @discardableResult
    func api(_ method: String, _ path: String, json: Any? = nil, atLeastMilliseconds: Int64 = 0) throws -> [UInt8] {
        let body = try json.map { Array(try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])) }
        let response = try send(method, "/api/v1" + path, body: body, atLeastMilliseconds: atLeastMilliseconds)
        guard (200..<300).contains(response.status) else {
            throw CommandFailure("\(method) /api/v1\(path): \(Self.errorText(response))")
        }
        return response.body
    }

    /// `api(_:_:json:)`, its answer parsed as a JSON object.
    func apiObject(_ method: String, _ path: String, json: Any? = nil, atLeastMilliseconds: Int64 = 0) throws -> [String: Any] {
        let body = try api(method, path, json: json, atLeastMilliseconds: atLeastMilliseconds)
        guard !body.isEmpty else { return [:] }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw CommandFailure("\(method) /api/v1\(path): the answer is not a JSON object")
        }
        return object
    }

    /// The status and the sandbox's `{"error":{"code","message"}}` (or APNs' `{"reason"}`) of an error answer.
    static func errorText(_ response: HTTPClient.Response) -> String {
        errorText(status: response.status, body: response.body)
    }

    static func errorText(status: Int, body: [UInt8]) -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        if let error = object?["error"] as? [String: Any] {
            let code = error["code"] as? String ?? "error"
            return "\(status) \(code): \(error["message"] as? String ?? "")"
        }
        if let reason = object?["reason"] as? String { return "\(status) \(reason)" }
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return "\(status)\(text.isEmpty ? "" : " " + text)"
    }

    /// A path segment or query value, percent-encoded (``PercentEncoding/segment(_:)``).
    static func escape(_ text: String) -> String { PercentEncoding.segment(text) }
}
