// APNs Sandbox — validation of the `apns-*` and `authorization` request headers.
import Support

extension PushRequestValidator {
    /// The longest accepted `apns-collapse-id`, in UTF-8 bytes.
    public static let maxCollapseIDBytes = 64
    /// The longest accepted `apns-topic`, in UTF-8 bytes.
    public static let maxTopicBytes = 255

    /// Validates the push headers.
    ///
    /// `headers` are (name, value) pairs in arrival order, duplicates included. Names must already be
    /// lowercase, as HTTP/2 requires and the HTTP layer guarantees. Values are used as they are: no
    /// whitespace is trimmed. Headers other than `authorization` and `apns-*` are ignored.
    ///
    /// Rules, in this order (the first failure wins):
    /// 1. `authorization` or any `apns-*` header (known or not) twice → `DuplicateHeaders`.
    /// 2. `apns-id` not a UUID in 8-4-4-4-12 hex form, either case → `BadMessageId`. Checked early so
    ///    the id to echo is known; it is returned lowercased.
    /// 3. `apns-push-type` not one of the 11 lowercase values → `InvalidPushType`.
    /// 4. `apns-priority` not exactly `1`, `5` or `10` → `BadPriority`. Absent, it is 10 as on APNs, but 5 for a
    ///    background push: 10 is not allowed there ("Pushing background updates to your App", Apple's
    ///    documentation), and a client that leaves the header out of a background push means the only valid value.
    /// 5. `apns-expiration` not a non-negative decimal integer (digits only, no sign) fitting `Int64`
    ///    → `BadExpirationDate`. `0` is valid ("try once, don't store").
    /// 6. `apns-collapse-id` longer than 64 UTF-8 bytes, or not UTF-8 → `BadCollapseId`. The HTTP layer
    ///    decodes header bytes that are not UTF-8 as U+FFFD, so a value holding U+FFFD is refused rather
    ///    than stored as something the client never sent. An empty value is treated as absent (Apple
    ///    does not say; it cannot collapse anything).
    /// 7. `apns-topic` empty, longer than 255 bytes, or containing white space or control characters
    ///    (any Unicode white space, C0, DEL or C1) → `BadTopic`. A missing topic is not an error here:
    ///    whether one is required depends on the connection (see `MissingTopic`).
    /// - Parameter headers: Lowercase header names and their values.
    /// - Returns: The validated headers, or the reason for rejecting the push.
    public static func headers(_ headers: [(name: String, value: String)]) -> Result<PushHeaders, APNsError> {
        var seen = SeenHeaders()
        var rawID: String?
        var rawPushType: String?
        var rawTopic: String?
        var rawPriority: String?
        var rawExpiration: String?
        var rawCollapseID: String?
        var authorization: String?
        for (name, value) in headers {
            let header = KnownHeader(name: name)
            guard seen.insert(header, name: name) else { return .failure(APNsError(.duplicateHeaders)) }
            switch header {
            case .apnsID: rawID = value
            case .pushType: rawPushType = value
            case .topic: rawTopic = value
            case .priority: rawPriority = value
            case .expiration: rawExpiration = value
            case .collapseID: rawCollapseID = value
            case .authorization: authorization = value
            case .otherAPNs, .unrelated: break
            }
        }

        var result = PushHeaders(authorization: authorization)
        if let rawID {
            guard let id = canonicalUUID(rawID) else { return .failure(APNsError(.badMessageId)) }
            result.apnsID = id
        }
        if let rawPushType {
            guard let pushType = PushType(rawValue: rawPushType) else { return .failure(APNsError(.invalidPushType)) }
            result.pushType = pushType
        }
        if let rawPriority {
            switch rawPriority {
            case "10": result.priority = 10
            case "5": result.priority = 5
            case "1": result.priority = 1
            default: return .failure(APNsError(.badPriority))
            }
        } else if result.pushType == .background {
            result.priority = 5
        }
        if let rawExpiration {
            guard let expiration = nonNegativeInteger(rawExpiration) else {
                return .failure(APNsError(.badExpirationDate))
            }
            result.expiration = expiration
        }
        if let rawCollapseID, !rawCollapseID.isEmpty {
            guard rawCollapseID.utf8.count <= maxCollapseIDBytes, !rawCollapseID.unicodeScalars.contains("\u{FFFD}") else {
                return .failure(APNsError(.badCollapseId))
            }
            result.collapseID = rawCollapseID
        }
        if let rawTopic {
            guard isValidTopic(rawTopic) else { return .failure(APNsError(.badTopic)) }
            result.topic = rawTopic
        }
        return .success(result)
    }

    /// The `apns-id` to echo on a response, even one rejecting these headers.
    ///
    /// - Parameter headers: Lowercase header names and their values, as for ``headers(_:)``.
    /// - Returns: The lowercased id when exactly one `apns-id` is present and it is a UUID; otherwise nil,
    ///   and the server makes its own.
    public static func echoedAPNsID(in headers: [(name: String, value: String)]) -> String? {
        var found: String?
        for (name, value) in headers where name == "apns-id" {
            guard found == nil else { return nil }
            found = value
        }
        return found.flatMap(canonicalUUID)
    }

    /// `text` lowercased when it is a UUID in 8-4-4-4-12 hex form of either case, else nil.
    static func canonicalUUID(_ text: String) -> String? {
        var hasUppercase = false
        var count = 0
        for byte in text.utf8 {
            switch count {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return nil }
            default:
                guard Hex.digitValue(byte) != nil else { return nil }
                hasUppercase = hasUppercase || ASCII.isUppercase(byte)
            }
            count += 1
            guard count <= 36 else { return nil }
        }
        guard count == 36 else { return nil }
        return hasUppercase ? String(decoding: text.utf8.map(ASCII.lowercased), as: UTF8.self) : text
    }

    /// True when `topic` is 1–255 bytes with no white space or control characters.
    public static func isValidTopic(_ topic: String) -> Bool {
        let bytes = topic.utf8
        guard !bytes.isEmpty, bytes.count <= maxTopicBytes else { return false }
        // Fast path: printable ASCII other than space is fine.
        if bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return true }
        return topic.unicodeScalars.allSatisfy { scalar in
            !scalar.properties.isWhitespace && scalar.properties.generalCategory != .control
        }
    }

    /// The value of a string of ASCII digits that fits `Int64`, else nil (empty, signs, spaces, overflow).
    static func nonNegativeInteger(_ text: String) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}

/// The headers ``PushRequestValidator/headers(_:)`` distinguishes.
private enum KnownHeader: UInt8 {
    case apnsID, pushType, topic, priority, expiration, collapseID, authorization, otherAPNs, unrelated

    init(name: String) {
        switch name {
        case "apns-id": self = .apnsID
        case "apns-push-type": self = .pushType
        case "apns-topic": self = .topic
        case "apns-priority": self = .priority
        case "apns-expiration": self = .expiration
        case "apns-collapse-id": self = .collapseID
        case "authorization": self = .authorization
        default: self = name.utf8.starts(with: "apns-".utf8) ? .otherAPNs : .unrelated
        }
    }
}

/// Which headers have been seen, to find duplicates without allocating for the usual case.
private struct SeenHeaders {
    private var known: UInt16 = 0
    private var otherAPNs: [String] = []

    /// Records `header`; false when it is a checked header that was already seen.
    mutating func insert(_ header: KnownHeader, name: String) -> Bool {
        switch header {
        case .unrelated:
            return true
        case .otherAPNs:
            // Rare (apns-channel-id, apns-request-id…): a linear scan over a tiny array is enough.
            guard !otherAPNs.contains(name) else { return false }
            otherAPNs.append(name)
            return true
        default:
            let bit: UInt16 = 1 << header.rawValue
            guard known & bit == 0 else { return false }
            known |= bit
            return true
        }
    }
}
