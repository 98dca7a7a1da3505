// APNs Sandbox — command line: serve, healthcheck, version.
import Foundation
import Server
import Support
import Transport

let version = "0.1.0"

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("apns-sandbox: \(message)\n".utf8))
    exit(2)
}

let usage = """
    usage: apns-sandbox <command> [options]

    commands:
      serve         run the sandbox
                    --config FILE       JSON configuration (default: none; env APNS_SANDBOX_CONFIG)
                    --data-dir DIR      data directory (env APNS_SANDBOX_DATA_DIR, default ./data)
                    --tls-port N        TLS (h2, http/1.1) port (env APNS_SANDBOX_TLS_PORT, default 2197)
                    --http-port N       cleartext (h2c, http/1.1) port (env APNS_SANDBOX_HTTP_PORT, default 8080)
                    --host ADDR         listen address for every listener (env APNS_SANDBOX_HOST, default ::)
                    --log-level LEVEL   trace|debug|info|notice|warning|error (env APNS_SANDBOX_LOG_LEVEL)
      healthcheck   exit 0 if the server answers GET /healthz with 200
                    --url URL           default http://127.0.0.1:$APNS_SANDBOX_HTTP_PORT/healthz (port 8080)
      version       print the version
    """

/// Parses `--name value` pairs after the command.
func options(_ arguments: ArraySlice<String>, allowed: Set<String>) -> [String: String] {
    var result: [String: String] = [:]
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        if argument == "-h" || argument == "--help" {
            print(usage)
            exit(0)
        }
        var name = argument
        var value: String?
        if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
            name = String(argument[..<equals])
            value = String(argument[argument.index(after: equals)...])
        }
        guard allowed.contains(name) else { fail("unknown option \(argument)\n\n\(usage)") }
        guard let resolved = value ?? iterator.next() else { fail("option \(name) needs a value") }
        result[name] = resolved
    }
    return result
}

func serve(_ arguments: ArraySlice<String>) -> Never {
    // Before any thread starts: block SIGTERM/SIGINT so they arrive only through the signalfd.
    let signals: SignalWaiter
    do { signals = try SignalWaiter() } catch { fail("cannot set up signal handling: \(error)") }

    let flags = options(arguments, allowed: ["--config", "--data-dir", "--tls-port", "--http-port", "--host", "--log-level"])
    let environment = ProcessInfo.processInfo.environment
    var configuration = SandboxConfiguration()
    do {
        if let path = flags["--config"] ?? environment["APNS_SANDBOX_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            configuration = try SandboxConfiguration.load(path: path)
        }
        try configuration.applyEnvironment(environment)
        if let value = flags["--data-dir"] { configuration.dataDirectory = value }
        if let value = flags["--log-level"] { configuration.logLevel = value }
        if let value = flags["--host"] { configuration.setHost(value) }
        if let value = flags["--tls-port"] { configuration.setPort(try SandboxConfiguration.port(value, "--tls-port"), tls: true) }
        if let value = flags["--http-port"] { configuration.setPort(try SandboxConfiguration.port(value, "--http-port"), tls: false) }
    } catch {
        fail("\(error)")
    }
    guard let level = Logger.Level(name: configuration.logLevel) else { fail("unknown log level \(configuration.logLevel)") }
    let logger = Logger(label: "apns-sandbox", level: level)

    let server: SandboxServer
    do {
        server = try SandboxServer(configuration: configuration, logger: logger)
        try server.start()
    } catch {
        fail("cannot start: \(error)")
    }
    logger.notice("APNs Sandbox ready", [
        ("version", version), ("data", configuration.dataDirectory), ("ca", server.tlsFiles.caCertificate),
        ("ports", server.listeners.map { "\($0.name)=\($0.port)" }.joined(separator: ",")),
    ])
    let signal = signals.wait()
    logger.notice("shutting down", [("signal", signal == SIGTERM ? "SIGTERM" : "SIGINT")])
    server.shutdown()
    logger.notice("stopped")
    exit(0)
}

func healthcheck(_ arguments: ArraySlice<String>) -> Never {
    let flags = options(arguments, allowed: ["--url"])
    let port = ProcessInfo.processInfo.environment["APNS_SANDBOX_HTTP_PORT"].flatMap(Int.init) ?? 8080
    let url = flags["--url"] ?? "http://127.0.0.1:\(port)/healthz"
    let status = HealthCheck.status(url: url)
    print(status.map { "\(url): \($0)" } ?? "\(url): no answer")
    exit(status == 200 ? 0 : 1)
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "serve": serve(arguments.dropFirst())
case "healthcheck": healthcheck(arguments.dropFirst())
case "version", "--version": print("apns-sandbox \(version)")
case "help", "--help", "-h", nil: print(usage)
case let other?: fail("unknown command \(other)\n\n\(usage)")
}
