// APNs Sandbox — the request checks APNs makes before it accepts a push.

/// Pure checks of one `POST /3/device/<token>` request, in the order the server applies them:
/// ``deviceToken(method:path:)``, ``headers(_:)``, ``bundleID(topic:pushType:priority:)`` once the
/// topic is known, then ``payload(_:pushType:)``.
///
/// Every function returns the first failing rule as an ``APNsError`` with Apple's reason. None does I/O,
/// allocates more than the values it returns, or touches Foundation, so all of them run on every push.
public enum PushRequestValidator {
    private static let devicePrefix = "/3/device/"

    /// Checks `:method` and `:path` and extracts the device token.
    ///
    /// Rules, in order:
    /// 1. `method` other than `POST` (case-sensitive, as HTTP methods are) → `MethodNotAllowed`.
    /// 2. A query (`?…`) is ignored: APNs defines none, and ignoring it is the lenient choice.
    /// 3. `/3/device` or `/3/device/` → `MissingDeviceToken`.
    /// 4. Any path not under `/3/device/`, or with a further `/` after the token → `BadPath`.
    /// 5. A token that is not 32–400 hex digits of even length → `BadDeviceToken`. Percent-escapes are not
    ///    decoded, so `%` counts as a non-hex character.
    /// - Parameters:
    ///   - method: The `:method` pseudo-header.
    ///   - path: The `:path` pseudo-header.
    /// - Returns: The token (lowercase hex), or the reason for rejecting the request.
    public static func deviceToken(method: String, path: Substring) -> Result<DeviceToken, APNsError> {
        guard method == "POST" else { return .failure(APNsError(.methodNotAllowed)) }
        let parsed = path.utf8.withContiguousStorageIfAvailable(deviceToken(inPath:))
        return parsed ?? Array(path.utf8).withUnsafeBufferPointer(deviceToken(inPath:))
    }

    /// The path rules of ``deviceToken(method:path:)`` over the raw bytes of `:path`.
    private static func deviceToken(inPath path: UnsafeBufferPointer<UInt8>) -> Result<DeviceToken, APNsError> {
        var path = path[...]
        if let query = path.firstIndex(of: UInt8(ascii: "?")) {
            path = path[..<query]
        }
        let prefix = devicePrefix.utf8
        guard path.starts(with: prefix) else {
            let missing = path.elementsEqual(prefix.dropLast())
            return .failure(APNsError(missing ? .missingDeviceToken : .badPath))
        }
        let token = path.dropFirst(prefix.count)
        guard !token.isEmpty else { return .failure(APNsError(.missingDeviceToken)) }
        guard !token.contains(UInt8(ascii: "/")) else { return .failure(APNsError(.badPath)) }
        guard let hex = DeviceToken.lowercasedHex(token) else { return .failure(APNsError(.badDeviceToken)) }
        return .success(DeviceToken(checkedHex: hex))
    }

    /// The topic rules of a push on a token connection, where `apns-topic` is required: `MissingTopic` without
    /// it, then ``bundleID(topic:pushType:priority:)``.
    /// - Returns: The topic and its bundle ID, or the reason for rejecting the push.
    public static func topic(_ headers: PushHeaders) -> Result<(topic: String, bundleID: String), APNsError> {
        guard let topic = headers.topic else { return .failure(APNsError(.missingTopic)) }
        switch bundleID(topic: topic, pushType: headers.pushType, priority: headers.priority) {
        case .success(let bundle): return .success((topic, bundle))
        case .failure(let error): return .failure(error)
        }
    }

    /// Applies the per-push-type topic and priority rules and returns the bundle ID.
    ///
    /// Rules, in order:
    /// 1. `priority` other than 1, 5 or 10 → `BadPriority`.
    /// 2. `background` with priority 10 → `BadPriority`; `liveactivity` with priority 1 → `BadPriority`.
    /// 3. An empty topic → `BadTopic`.
    /// 4. A type with a ``PushType/topicSuffix``: the topic must be a non-empty bundle ID plus that suffix
    ///    (byte-exact, case-sensitive), else `BadTopic`. The sandbox picks `BadTopic` rather than
    ///    `TopicDisallowed` because the topic's form is wrong, not the caller's permission.
    /// 5. `alert` or `background`: a topic ending in another type's suffix → `BadTopic` (a bundle ID that
    ///    really ends in, say, `.voip` therefore cannot receive alerts here).
    /// 6. `mdm`: the topic is returned unchanged (it is the MDM certificate's UID, not a bundle ID).
    /// 7. No push type: a topic ending in a known suffix has the suffix removed, as legacy clients that
    ///    omit `apns-push-type` still name the VoIP or complication topic; any other topic is the bundle ID.
    /// - Parameters:
    ///   - topic: `apns-topic`, or the topic taken from a single-topic certificate.
    ///   - pushType: `apns-push-type`, nil when absent.
    ///   - priority: The validated `apns-priority` (10 when absent).
    /// - Returns: The bundle ID (the topic without its suffix), or the reason for rejecting the push.
    public static func bundleID(topic: String, pushType: PushType?, priority: Int) -> Result<String, APNsError> {
        guard priority == 1 || priority == 5 || priority == 10 else { return .failure(APNsError(.badPriority)) }
        switch pushType {
        case .background where priority == 10, .liveactivity where priority == 1:
            return .failure(APNsError(.badPriority))
        default:
            break
        }
        guard !topic.isEmpty else { return .failure(APNsError(.badTopic)) }
        if let suffix = pushType?.topicSuffix {
            guard let bundle = removing(suffix: suffix, from: topic) else { return .failure(APNsError(.badTopic)) }
            return .success(bundle)
        }
        switch pushType {
        case .mdm:
            return .success(topic)
        case .alert, .background:
            for other in PushType.allCases {
                if let suffix = other.topicSuffix, removing(suffix: suffix, from: topic) != nil {
                    return .failure(APNsError(.badTopic))
                }
            }
            return .success(topic)
        default:
            for other in PushType.allCases {
                if let suffix = other.topicSuffix, let bundle = removing(suffix: suffix, from: topic) {
                    return .success(bundle)
                }
            }
            return .success(topic)
        }
    }

    /// Checks the body's size and shape and extracts the `aps` fields the server needs.
    ///
    /// Rules, in order:
    /// 1. An empty body → `PayloadEmpty`.
    /// 2. More bytes than `pushType`'s ``PushType/maxPayloadBytes`` (the `alert` limit, 4096, when the type
    ///    is absent) → `PayloadTooLarge`. The size is checked before any parsing.
    /// 3. Not strict RFC 8259 JSON in UTF-8, not an object, or no `aps` member whose value is an object
    ///    → `BadPayload` (a sandbox extension; see ``APNsReason/badPayload``).
    /// - Parameters:
    ///   - body: The request body, uncompressed.
    ///   - pushType: `apns-push-type`, nil when absent.
    /// - Returns: The parsed payload, or the reason for rejecting the push.
    public static func payload(_ body: [UInt8], pushType: PushType?) -> Result<Payload, APNsError> {
        guard !body.isEmpty else { return .failure(APNsError(.payloadEmpty)) }
        guard body.count <= (pushType ?? .alert).maxPayloadBytes else {
            return .failure(APNsError(.payloadTooLarge))
        }
        guard let payload = Payload(parsing: body) else { return .failure(APNsError(.badPayload)) }
        return .success(payload)
    }

    /// `topic` without `suffix`, or nil when it does not end with `suffix` or nothing would remain.
    private static func removing(suffix: String, from topic: String) -> String? {
        let topicBytes = topic.utf8
        let suffixBytes = suffix.utf8
        guard topicBytes.count > suffixBytes.count, topicBytes.reversed().starts(with: suffixBytes.reversed()) else {
            return nil
        }
        return String(decoding: topicBytes.dropLast(suffixBytes.count), as: UTF8.self)
    }
}
