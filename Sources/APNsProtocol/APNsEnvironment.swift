// APNs Sandbox — the two APNs environments and the host names that select them.

/// An APNs environment: device tokens, signing keys and certificates belong to exactly one.
public enum APNsEnvironment: String, Sendable, Codable, CaseIterable {
    /// The sandbox (development) environment, for development builds.
    case development
    /// The production environment, for App Store, TestFlight and Ad Hoc builds.
    case production

    /// The environment that one of Apple's APNs host names selects.
    ///
    /// `api.sandbox.push.apple.com` and `api.development.push.apple.com` (both names appear in Apple's
    /// material) select ``development``; `api.push.apple.com` selects ``production``. The comparison
    /// ignores ASCII case, a `:port` suffix and one trailing dot (the fully qualified form).
    /// - Parameter host: An `:authority` or `Host` header value, such as `api.push.apple.com:443`.
    /// - Returns: nil for any other host, including IP literals and `localhost`.
    public init?(host: String) {
        var name = Substring(host)
        if let colon = name.utf8.firstIndex(of: UInt8(ascii: ":")) {
            name = name[..<colon]
        }
        if name.utf8.last == UInt8(ascii: ".") {
            name = name.dropLast()
        }
        if ASCII.equalsIgnoringCase(name, "api.push.apple.com") {
            self = .production
        } else if ASCII.equalsIgnoringCase(name, "api.sandbox.push.apple.com")
            || ASCII.equalsIgnoringCase(name, "api.development.push.apple.com")
        {
            self = .development
        } else {
            return nil
        }
    }
}
