// APNs Sandbox — command line: serve, healthcheck, token, client-cert, version; the rest in CommandRegistry.
import Crypto
import Foundation
import Server
import Support
import Transport

let version = SandboxServer.version  // also apns_sandbox_build_info's label

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("apns-sandbox: \(message)\n".utf8))
    exit(2)
}

let commandUsages = BuiltinUsages.all

let usage = "usage: apns-sandbox <command> [options]\n\ncommands:\n" + commandUsages.map(\.text).joined(separator: "\n")
    + "\n\ncommands that talk to a running sandbox (`apns-sandbox <command> --help` for their options):\n"
    + CommandRegistry.overview

/// The usage of one command.
func usage(of command: String) -> String {
    let text = commandUsages.first { $0.name == command }?.text ?? ""
    return "usage: apns-sandbox \(command) [options]\n\n" + text + "\n"
}

/// Parses `--name value` pairs after `command`; `--help` prints the command's own usage.
func options(_ arguments: ArraySlice<String>, allowed: Set<String>, command: String) -> [String: String] {
    var result: [String: String] = [:]
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        if argument == "-h" || argument == "--help" {
            print(usage(of: command), terminator: "")
            exit(0)
        }
        var name = argument
        var value: String?
        if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
            name = String(argument[..<equals])
            value = String(argument[argument.index(after: equals)...])
        }
        guard allowed.contains(name) else { fail("\(command): unknown option \(name) (see apns-sandbox \(command) --help)") }
        guard let resolved = value ?? iterator.next() else { fail("option \(name) needs a value") }
        result[name] = resolved
    }
    return result
}

func serve(_ arguments: ArraySlice<String>) -> Never {
    // Before any thread starts: block SIGTERM/SIGINT so they arrive only through the signalfd.
    let signals: SignalWaiter
    do { signals = try SignalWaiter() } catch { fail("cannot set up signal handling: \(error)") }

    let flags = options(arguments, allowed: ["--config", "--data-dir", "--tls-port", "--http-port", "--host", "--log-level"], command: "serve")
    let environment = ProcessInfo.processInfo.environment
    var configuration = SandboxConfiguration()
    let path = flags["--config"] ?? environment["APNS_SANDBOX_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 })
    do {
        if let path {
            configuration = try SandboxConfiguration.load(path: path)
        }
        try configuration.applyEnvironment(environment)
        if let value = flags["--data-dir"] { configuration.dataDirectory = value }
        if let value = flags["--log-level"] {
            guard let level = Logger.Level(name: value) else {
                fail("unknown log level \(value) (one of trace, debug, info, notice, warning, error)")
            }
            configuration.logLevel = level
        }
        if let value = flags["--host"] { configuration.setHost(value) }
        if let value = flags["--tls-port"] { try configuration.setTLSPorts(value, "--tls-port") }
        if let value = flags["--http-port"] { configuration.setPort(try SandboxConfiguration.port(value, "--http-port"), tls: false) }
        // Checked here too, so that a problem names the file it comes from (flags and variables included).
        try configuration.validate()
    } catch let error as ConfigurationError where path != nil && !error.description.hasPrefix("invalid configuration") {
        fail("invalid configuration \(path ?? ""): \(error)")
    } catch {
        fail("\(error)")
    }
    let logger = Logger(label: "apns-sandbox", level: configuration.logLevel)
    // Memory a peer made the server hold goes back to the system once freed (docs/security.md).
    MemoryTrimmer.fixAllocatorThresholds(environment: environment)

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

/// Loads `--config` (or APNS_SANDBOX_CONFIG, or config/sandbox.json when it exists) for the tools.
func toolConfiguration(_ flags: [String: String]) -> SandboxConfiguration {
    let environment = ProcessInfo.processInfo.environment
    let path = ConfigurationFile.path(flags["--config"])
    do {
        var configuration = try path.map { try SandboxConfiguration.load(path: $0) } ?? SandboxConfiguration()
        try configuration.applyEnvironment(environment)
        if let dataDirectory = flags["--data-dir"] { configuration.dataDirectory = dataDirectory }
        return configuration
    } catch {
        fail("\(error)")
    }
}

func token(_ arguments: ArraySlice<String>) -> Never {
    let flags = options(arguments, allowed: ["--config", "--key-id", "--issued-at"], command: "token")
    let configuration = toolConfiguration(flags)
    var issuedAt: Int64?
    if let text = flags["--issued-at"] {
        guard let value = Int64(text) else { fail("--issued-at must be seconds since the epoch") }
        issuedAt = value
    }
    do {
        print(try CredentialTools.providerToken(configuration: configuration, keyID: flags["--key-id"], issuedAt: issuedAt))
    } catch {
        fail("\(error)")
    }
    exit(0)
}

func clientCertificate(_ arguments: ArraySlice<String>) -> Never {
    let flags = options(arguments, allowed: ["--config", "--data-dir", "--bundle-id", "--topics", "--environment", "--out"], command: "client-cert")
    let configuration = toolConfiguration(flags)
    guard let bundleID = flags["--bundle-id"], !bundleID.isEmpty else { fail("--bundle-id is required") }
    guard let environment = CertificateEnvironment(rawValue: flags["--environment"] ?? "both") else {
        fail("--environment must be development, production or both")
    }
    let topics = flags["--topics"].map { $0.split(separator: ",").map(String.init) }
    do {
        let issued = try CredentialTools.clientCertificate(
            configuration: configuration, bundleID: bundleID, topics: topics, environment: environment)
        if let prefix = flags["--out"] {
            try issued.certificatePEM.write(toFile: prefix + ".pem", atomically: true, encoding: .utf8)
            try issued.privateKeyPEM.write(toFile: prefix + "-key.pem", atomically: true, encoding: .utf8)
            chmod(prefix + "-key.pem", 0o600)
            print("\(prefix).pem\n\(prefix)-key.pem")
        } else {
            print(issued.certificatePEM + issued.privateKeyPEM, terminator: "")
        }
    } catch {
        fail("\(error)")
    }
    exit(0)
}

func healthcheck(_ arguments: ArraySlice<String>) -> Never {
    let flags = options(arguments, allowed: ["--url", "--config"], command: "healthcheck")
    let url: String
    if let given = flags["--url"] {
        url = given
    } else {
        // The configured cleartext listener (file, then APNS_SANDBOX_* variables), as `serve` would bind it.
        let configuration = toolConfiguration(flags)
        guard let configured = HealthCheck.defaultURL(for: configuration) else {
            fail("no cleartext listener is configured: give --url")
        }
        url = configured
    }
    let status = HealthCheck.status(url: url)
    print(status.map { "\(url): \($0)" } ?? "\(url): no answer")
    exit(status == 200 ? 0 : 1)
}

let arguments = CommandLine.arguments.dropFirst()
CommandRunner.runIfRegistered(Array(arguments))
switch arguments.first {
case "serve": serve(arguments.dropFirst())
case "healthcheck": healthcheck(arguments.dropFirst())
case "token": token(arguments.dropFirst())
case "client-cert": clientCertificate(arguments.dropFirst())
case "version", "--version":
    let rest = arguments.dropFirst()
    if let extra = rest.first(where: { !$0.hasPrefix("-") }) {
        fail("version: unexpected argument \(extra) (see apns-sandbox version --help)")
    }
    // `--help` prints the usage; any other option is an error naming it.
    _ = options(rest, allowed: [], command: "version")
    print("apns-sandbox \(version)")
case "help", "--help", "-h", nil: print(usage)
case let other?: fail("unknown command \(other) (see apns-sandbox --help)")
}
