// APNs Sandbox — method + path routing with `{parameter}` segments.
import Glibc
import Support

/// Path parameters captured by a route pattern such as `/3/device/{token}`.
public struct PathParameters: Sendable {
    /// What a `{name}` or `{name...}` matched: a byte range of the path, decoded when it is read (the provider
    /// endpoint reads the token from the path itself: a string made for it would be made per push for nothing).
    private struct Capture: Sendable {
        var name: String
        var bytes: Range<Int>
        var isRest: Bool
    }

    private var path: Substring = ""
    /// The first capture kept inline: no array for the common case of one (the provider endpoint's, most API routes).
    private var first: Capture?
    private var others: [Capture] = []

    public init() {}

    init(path: Substring) {
        self.path = path
    }

    mutating func append(_ name: String, bytes: Range<Int>, isRest: Bool) {
        let capture = Capture(name: name, bytes: bytes, isRest: isRest)
        if first == nil { first = capture } else { others.append(capture) }
    }

    /// The captured text: percent-decoded for `{name}`, as it is for `{name...}`.
    public subscript(name: String) -> String? {
        guard let capture = first?.name == name ? first : others.first(where: { $0.name == name }) else { return nil }
        let utf8 = path.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: capture.bytes.lowerBound)
        let end = utf8.index(start, offsetBy: capture.bytes.count)
        let text = String(decoding: utf8[start..<end], as: UTF8.self)
        return capture.isRest ? text : text.removingPercentEncodingOrSelf
    }
}

/// Routes requests by method and path. Patterns are literal segments and `{name}` captures;
/// a trailing `{name...}` captures the rest of the path. Unknown paths get 404, known paths
/// with another method 405 with `Allow`, both as JSON errors. What a handler throws, or its
/// ``HandlerResult/blocking(_:)`` work throws, is answered by ``errors``.
public struct Router: HTTPResponder {
    public typealias Handler = @Sendable (HTTPRequest, PathParameters) throws -> HandlerResult

    private enum Segment: Sendable {
        case literal([UInt8])
        case parameter(String)
        case rest(String)
    }

    private struct Route: Sendable {
        var method: String
        var segments: [Segment]
        var handler: Handler
    }

    private var routes: [Route] = []
    /// Answers paths no route matches; defaults to a JSON 404.
    public var notFound: Handler = { request, _ in
        .response(.jsonError(status: 404, code: "not_found", message: "No route for \(request.path)"))
    }

    /// The one mapping of handlers' errors to responses.
    public let errors: ErrorResponder

    public init(errors: ErrorResponder = ErrorResponder(logger: Logger(label: "http"))) {
        self.errors = errors
    }

    public mutating func on(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments: [Segment] = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part.hasPrefix("{") && part.hasSuffix("...}") {
                return .rest(String(part.dropFirst().dropLast(4)))
            }
            if part.hasPrefix("{") && part.hasSuffix("}") {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(Array(part.utf8))
        }
        routes.append(Route(method: method.uppercased(), segments: segments, handler: handler))
    }

    /// Routes every method of `pattern` to `handler` (which then answers wrong methods itself).
    public mutating func any(_ pattern: String, _ handler: @escaping Handler) { on("*", pattern, handler) }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { on("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { on("POST", pattern, handler) }

    public func respond(to request: HTTPRequest) -> HandlerResult {
        let path = request.path
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, path) else { continue }
            if route.method == request.method || route.method == "*" || (request.method == "HEAD" && route.method == "GET") {
                return answer(request, parameters, route.handler)
            }
            allowed.append(route.method)
        }
        if !allowed.isEmpty {
            var response = HTTPResponse.jsonError(
                status: 405, code: "method_not_allowed", message: "\(request.method) is not allowed on \(request.path)")
            response.headers.set("allow", allowed.joined(separator: ", "))
            return .response(response)
        }
        return answer(request, PathParameters(), notFound)
    }

    private func answer(_ request: HTTPRequest, _ parameters: PathParameters, _ handler: Handler) -> HandlerResult {
        let result: HandlerResult
        do {
            result = try handler(request, parameters)
        } catch {
            return .response(errors.response(for: error, to: request))
        }
        guard case .blocking(let job) = result else { return result }
        let errors = self.errors
        return .blocking {
            do {
                return try job()
            } catch {
                return errors.response(for: error, to: request)
            }
        }
    }

    /// Matches `path` segment by segment over its UTF-8 bytes, without allocating (hot path).
    private static func match(_ segments: [Segment], _ path: Substring) -> PathParameters? {
        var text = path
        return text.withUTF8 { bytes -> PathParameters? in
            var parameters = PathParameters(path: path)
            var position = 0
            let slash = UInt8(ascii: "/")
            func skipSlashes() {
                while position < bytes.count && bytes[position] == slash { position += 1 }
            }
            /// The byte range of the next non-empty segment.
            func nextSegment() -> Range<Int>? {
                skipSlashes()
                guard position < bytes.count else { return nil }
                let start = position
                while position < bytes.count && bytes[position] != slash { position += 1 }
                return start..<position
            }
            for segment in segments {
                switch segment {
                case .literal(let literal):
                    guard let range = nextSegment(), range.count == literal.count,
                          let base = bytes.baseAddress,
                          literal.withUnsafeBufferPointer({ literalBytes in
                              literalBytes.baseAddress.map { memcmp($0, base + range.lowerBound, range.count) == 0 } ?? false
                          })
                    else { return nil }
                case .parameter(let name):
                    guard let range = nextSegment() else { return nil }
                    parameters.append(name, bytes: range, isRest: false)
                case .rest(let name):
                    skipSlashes()
                    parameters.append(name, bytes: position..<bytes.count, isRest: true)
                    return parameters
                }
            }
            return nextSegment() == nil ? parameters : nil
        }
    }
}

extension String {
    /// Percent-decodes without Foundation; malformed escapes are kept as they are.
    public var removingPercentEncodingOrSelf: String {
        let hasEscape = utf8.withContiguousStorageIfAvailable { bytes in
            bytes.baseAddress.map { memchr($0, Int32(UInt8(ascii: "%")), bytes.count) != nil } ?? false
        } ?? utf8.contains(UInt8(ascii: "%"))
        guard hasEscape else { return self }
        var bytes: [UInt8] = []
        var iterator = Array(utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let high = Hex.digitValue(iterator[iterator.startIndex]),
               let low = Hex.digitValue(iterator[iterator.startIndex + 1]) {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
