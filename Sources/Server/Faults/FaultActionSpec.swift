// APNs Sandbox — a fault rule's `action` as JSON: one key, the kind, whose object holds its parameters.
import APNsProtocol
import Sandbox

/// `action`: `{"<kind>": {parameters}}` with exactly one kind —
/// `reject {reason, timestamp?}`, `goAway {reason?, errorCode?}`, `resetStream {errorCode?}`, `close {}`,
/// `stall {milliseconds?}`, `trickle {bytesPerChunk?, intervalMilliseconds?}`,
/// `limitConcurrentStreams {to?, milliseconds?}`, `lose {}`, `deliverLate {milliseconds}`, `extensionCrash {}`,
/// `extensionTimeout {}`. HTTP/2 error codes are numbers or their names (`REFUSED_STREAM`).
struct FaultActionSpec: Codable, Sendable, Equatable {
    /// The parameters of every kind; each kind allows only its own.
    struct Parameters: Codable, Sendable, Equatable, StrictlyKeyed {
        enum CodingKeys: String, CodingKey, CaseIterable {
            case reason, timestamp, errorCode, milliseconds, bytesPerChunk, intervalMilliseconds, to
        }
        typealias Keys = CodingKeys

        var reason: String?
        var timestamp: Int64?
        var errorCode: HTTP2ErrorCode?
        var milliseconds: Int64?
        var bytesPerChunk: Int?
        var intervalMilliseconds: Int64?
        var to: UInt32?

        init() {}

        init(from decoder: any Decoder) throws {
            let section = try ConfigSection(decoder, defaults: Self())
            reason = try section(.reason, \.reason)
            timestamp = try section(.timestamp, \.timestamp)
            errorCode = try section(.errorCode, \.errorCode)
            milliseconds = try section(.milliseconds, \.milliseconds)
            bytesPerChunk = try section(.bytesPerChunk, \.bytesPerChunk)
            intervalMilliseconds = try section(.intervalMilliseconds, \.intervalMilliseconds)
            to = try section(.to, \.to)
        }

        /// The keys given.
        var given: [CodingKeys] {
            var keys: [CodingKeys] = []
            if reason != nil { keys.append(.reason) }
            if timestamp != nil { keys.append(.timestamp) }
            if errorCode != nil { keys.append(.errorCode) }
            if milliseconds != nil { keys.append(.milliseconds) }
            if bytesPerChunk != nil { keys.append(.bytesPerChunk) }
            if intervalMilliseconds != nil { keys.append(.intervalMilliseconds) }
            if to != nil { keys.append(.to) }
            return keys
        }
    }

    /// The kinds and the parameters each takes.
    static let kinds: [String: [Parameters.CodingKeys]] = [
        "reject": [.reason, .timestamp], "goAway": [.reason, .errorCode], "resetStream": [.errorCode], "close": [],
        "stall": [.milliseconds], "trickle": [.bytesPerChunk, .intervalMilliseconds],
        "limitConcurrentStreams": [.to, .milliseconds], "lose": [], "deliverLate": [.milliseconds],
        "extensionCrash": [], "extensionTimeout": [],
    ]
    static let kindNames = ["reject", "goAway", "resetStream", "close", "stall", "trickle", "limitConcurrentStreams",
                            "lose", "deliverLate", "extensionCrash", "extensionTimeout"]

    var kind: String
    var parameters: Parameters

    init(kind: String, parameters: Parameters = Parameters()) {
        self.kind = kind
        self.parameters = parameters
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        let keys = container.allKeys
        guard keys.count == 1, let key = keys.first else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath,
                debugDescription: "must have exactly one of: \(Self.kindNames.joined(separator: ", "))"))
        }
        guard let allowed = Self.kinds[key.stringValue] else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath + [key],
                debugDescription: "unknown action; known: \(Self.kindNames.joined(separator: ", "))"))
        }
        kind = key.stringValue
        parameters = try container.decodeIfPresent(Parameters.self, forKey: key) ?? Parameters()
        if let extra = parameters.given.first(where: { !allowed.contains($0) }) {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath + [key, AnyCodingKey(stringValue: extra.rawValue)],
                debugDescription: "unknown key; known here: \(allowed.map(\.rawValue).joined(separator: ", "))"))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try container.encode(parameters, forKey: AnyCodingKey(stringValue: kind))
    }

    /// The action, checked.
    func action() throws(FaultRuleSpec.Problem) -> FaultAction {
        let p = parameters
        func problem(_ field: String, _ message: String) -> FaultRuleSpec.Problem {
            FaultRuleSpec.Problem(field: "action.\(kind).\(field)", message: message)
        }
        func duration(_ value: Int64?, _ field: String, default fallback: Int64?) throws(FaultRuleSpec.Problem) -> Int64? {
            guard let value = value ?? fallback else { return nil }
            guard (0...86_400_000).contains(value) else { throw problem(field, "must be 0 to 86400000 (a day)") }
            return value
        }
        switch kind {
        case "reject":
            guard let name = p.reason else { throw problem("reason", "is required (one of Apple's reasons, e.g. Unregistered)") }
            guard let reason = APNsReason(rawValue: name) else {
                throw problem("reason", "is not one of Apple's reasons: \(APNsReason.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if p.timestamp != nil && reason.status != 410 { throw problem("timestamp", "only 410 answers carry a timestamp") }
            return .reject(reason, timestamp: p.timestamp)
        case "goAway":
            let reason = p.reason ?? APNsReason.shutdown.rawValue
            guard !reason.isEmpty, reason.utf8.count <= 200, reason.allSatisfy({ $0.isASCII && !$0.isNewline && $0 != "\"" && $0 != "\\" }) else {
                throw problem("reason", "must be 1–200 printable ASCII characters without quotes or backslashes")
            }
            return .goAway(reason: reason, errorCode: (p.errorCode ?? .noError).value)
        case "resetStream":
            return .resetStream(errorCode: (p.errorCode ?? .cancel).value)
        case "close":
            return .closeConnection
        case "stall":
            return .stall(milliseconds: try duration(p.milliseconds, "milliseconds", default: nil))
        case "trickle":
            let bytes = p.bytesPerChunk ?? 1
            guard (1...16_384).contains(bytes) else { throw problem("bytesPerChunk", "must be 1 to 16384") }
            let interval = try duration(p.intervalMilliseconds, "intervalMilliseconds", default: 100) ?? 100
            guard interval >= 1 else { throw problem("intervalMilliseconds", "must be at least 1") }
            return .trickle(bytesPerChunk: bytes, intervalMilliseconds: interval)
        case "limitConcurrentStreams":
            let to = p.to ?? 1
            guard to >= 1 else { throw problem("to", "must be at least 1") }
            let milliseconds = try duration(p.milliseconds, "milliseconds", default: 10_000) ?? 10_000
            return .limitConcurrentStreams(to: to, milliseconds: milliseconds)
        case "lose":
            return .deliver(.lose)
        case "deliverLate":
            guard let milliseconds = try duration(p.milliseconds, "milliseconds", default: nil), milliseconds > 0 else {
                throw problem("milliseconds", "is required (more than 0)")
            }
            return .deliver(.deliverLate(milliseconds: milliseconds))
        case "extensionCrash":
            return .deliver(.extensionCrash)
        default:
            return .deliver(.extensionTimeout)
        }
    }

    /// The action written back.
    init(_ action: FaultAction) {
        var p = Parameters()
        switch action {
        case .reject(let reason, let timestamp):
            kind = "reject"
            p.reason = reason.rawValue
            p.timestamp = timestamp
        case .goAway(let reason, let errorCode):
            kind = "goAway"
            p.reason = reason
            p.errorCode = HTTP2ErrorCode(errorCode)
        case .resetStream(let errorCode):
            kind = "resetStream"
            p.errorCode = HTTP2ErrorCode(errorCode)
        case .closeConnection:
            kind = "close"
        case .stall(let milliseconds):
            kind = "stall"
            p.milliseconds = milliseconds
        case .trickle(let bytes, let interval):
            kind = "trickle"
            p.bytesPerChunk = bytes
            p.intervalMilliseconds = interval
        case .limitConcurrentStreams(let to, let milliseconds):
            kind = "limitConcurrentStreams"
            p.to = to
            p.milliseconds = milliseconds
        case .deliver(let fault):
            kind = fault.name
            if case .deliverLate(let milliseconds) = fault { p.milliseconds = milliseconds }
        case .none:
            kind = "none"
        }
        parameters = p
    }
}

/// An HTTP/2 error code (RFC 9113 §7): a number, or its name as JSON writes it.
struct HTTP2ErrorCode: Codable, Sendable, Equatable {
    static let names = [
        "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
        "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
    ]
    static let noError = HTTP2ErrorCode(0)
    static let cancel = HTTP2ErrorCode(8)

    var value: UInt32

    init(_ value: UInt32) {
        self.value = value
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt32.self) {
            value = number
        } else if let name = try? container.decode(String.self), let index = Self.names.firstIndex(of: name) {
            value = UInt32(index)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "must be an HTTP/2 error code: a number or one of \(Self.names.joined(separator: ", "))")
        }
    }

    /// Written as its name when it has one.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if Int(value) < Self.names.count { try container.encode(Self.names[Int(value)]) } else { try container.encode(value) }
    }
}
