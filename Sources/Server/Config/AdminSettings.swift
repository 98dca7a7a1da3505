// APNs Sandbox — configuration of the admin side: who may use /api/v1 (docs/security.md).

/// Who may use the admin side of the sandbox: `/api/v1` (and what later joins it: the dashboard,
/// metrics). The provider endpoint (`/3/device`) keeps APNs' own authentication; `/healthz`, `/readyz`,
/// `/ca.pem` and `/api/v1/openapi.json` are public.
///
/// `authentication`:
/// - `auto` (the default): an admin token is required whenever a listener that serves the admin side
///   is bound to an address other than loopback (`127.0.0.0/8`, `::1`); a loopback-only sandbox asks
///   for none, and then answers only requests whose `Host` is a loopback or configured name (so that a
///   web page cannot reach it by DNS rebinding).
/// - `required`: the token is always required.
/// - `off`: never required, even on every interface (the start-up log says so loudly).
///
/// The token is `token`, else `APNS_SANDBOX_ADMIN_TOKEN`, else the contents of `tokenFile`, else one
/// generated on first need into `<dataDirectory>/admin-token` (mode 0600) and kept there.
public struct AdminSettings: Codable, Sendable, Equatable, StrictlyKeyed {
    public enum Authentication: String, Sendable, ConfigurationEnum {
        case auto, required, off
    }

    public var authentication: Authentication = .auto
    /// The admin token itself (at least 16 characters). Prefer `tokenFile` or the environment.
    public var token: String?
    /// A file holding the admin token (surrounding whitespace is ignored); relative to the config file.
    public var tokenFile: String?
    /// The user name HTTP Basic authentication expects (the password is the token).
    public var username = "admin"
    /// More `Host` names a loopback-only sandbox without a token answers (besides loopback names,
    /// Apple's APNs host names and `tls.extraNames`).
    public var allowedHosts: [String] = []
    /// Origins (`https://dashboard.example.com`) whose pages may call the API from a browser (CORS);
    /// none by default.
    public var allowedOrigins: [String] = []

    enum Keys: String, CodingKey, CaseIterable {
        case authentication, token, tokenFile, username, allowedHosts, allowedOrigins
    }

    public init() {}

    public init(from decoder: any Decoder) throws {
        let section = try ConfigSection(decoder, defaults: Self())
        authentication = try section(.authentication, \.authentication)
        token = try section(.token, \.token)
        tokenFile = try section(.tokenFile, \.tokenFile)
        username = try section(.username, \.username)
        allowedHosts = try section(.allowedHosts, \.allowedHosts)
        allowedOrigins = try section(.allowedOrigins, \.allowedOrigins)
    }

    /// Shortest token accepted from the configuration or the environment.
    public static let minimumTokenLength = 16

    /// Problems with these settings, for ``SandboxConfiguration/validate()``.
    func problems() -> [String] {
        var problems: [String] = []
        if let token, token.count < Self.minimumTokenLength {
            problems.append("admin.token must be at least \(Self.minimumTokenLength) characters")
        }
        if token != nil && tokenFile != nil {
            problems.append("admin.token and admin.tokenFile: give one, not both")
        }
        if username.isEmpty || username.contains(":") {
            problems.append("admin.username must be non-empty and contain no ':'")
        }
        for origin in allowedOrigins where AdminOrigin(origin) == nil {
            problems.append("admin.allowedOrigins: \"\(origin)\" is not an origin such as https://host or http://host:port")
        }
        for host in allowedHosts where host.isEmpty || host.contains("/") || host.contains(" ") {
            problems.append("admin.allowedHosts: \"\(host)\" is not a host name")
        }
        return problems
    }
}
