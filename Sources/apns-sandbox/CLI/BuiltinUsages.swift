// APNs Sandbox — the usages of the commands main.swift runs itself (serve, healthcheck, token, client-cert, version).

/// Kept out of main.swift so that every command's code (shell completion too) can read them: top-level
/// values in main.swift belong to the main actor.
enum BuiltinUsages {
    /// Each command's own usage (`apns-sandbox <command> --help`), in the order the global usage lists them.
    static let all: [(name: String, text: String)] = [
        ("serve", """
              serve         run the sandbox
                            --config FILE       JSON configuration (default: none; env APNS_SANDBOX_CONFIG)
                            --data-dir DIR      data directory (env APNS_SANDBOX_DATA_DIR, default ./data)
                            --tls-port N[,N…]   TLS (h2, http/1.1) port(s) (env APNS_SANDBOX_TLS_PORT, default 2197)
                            --http-port N       cleartext (h2c, http/1.1) port (env APNS_SANDBOX_HTTP_PORT, default 8080)
                            --host ADDR         listen address for every listener (env APNS_SANDBOX_HOST, default 127.0.0.1)
                            --log-level LEVEL   trace|debug|info|notice|warning|error (env APNS_SANDBOX_LOG_LEVEL)
                            env APNS_SANDBOX_ADMIN_TOKEN, APNS_SANDBOX_ADMIN_AUTH (auto|required|off): the admin API's
                            token, needed when a listener is not loopback-only (docs/security.md)
                            env APNS_SANDBOX_STREAMS_BEFORE_AUTHENTICATION=N: HTTP/2 streams before a valid provider
                            token (APNs: 1); 0 for load tools (h2load -m100) that open many at once
            """),
        ("healthcheck", """
              healthcheck   exit 0 if the server answers GET /healthz with 200
                            --url URL           default: /healthz on the configured cleartext listener (its port
                                                from the file and APNS_SANDBOX_HTTP_PORT, 8080 by default)
                            --config FILE       which configuration (default APNS_SANDBOX_CONFIG, else config/sandbox.json)
            """),
        ("token", """
              token         print a provider token (JWT, ES256) signed with a key from the configuration
                            --config FILE       configuration with teams[].keys[].privateKeyFile (default config/sandbox.json)
                            --key-id ID         which key (default: the first with a private key file)
                            --issued-at SECONDS the token's iat (default: now)
            """),
        ("client-cert", """
              client-cert   issue an APNs-style client certificate signed by the sandbox CA
                            --bundle-id ID      the app (subject UID; default topic)
                            --topics A,B        topics (default: ID, ID.voip, ID.complication)
                            --environment E     development|production|both (default both)
                            --config FILE / --data-dir DIR   where the CA lives (default ./data)
                            --out PREFIX        writes PREFIX.pem and PREFIX-key.pem (default: print both PEMs)
            """),
        ("version", """
              version       print the version
            """),
    ]
}
