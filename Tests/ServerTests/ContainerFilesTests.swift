// APNs Sandbox — the Docker files, checked without a container engine: the compose file parses, the image's
// settings listen on Apple's ports, and the image's way to 443 (a file capability, a non-root user) works.
// scripts/image builds and runs the image itself (docs/container.md).
import Foundation
@testable import Server
import Testing

@Suite struct ContainerFilesTests {
    /// `ENV` of the Dockerfile's runtime stage, continuation lines joined (`ENV A=1 B=2 \` …).
    static func dockerfileEnvironment() throws -> [String: String] {
        let text = try String(contentsOfFile: TestPaths.packageRoot + "/Dockerfile", encoding: .utf8)
        let joined = text.replacingOccurrences(of: "\\\n", with: " ")
        let runtime = try #require(joined.components(separatedBy: "FROM debian:").last)
        var environment: [String: String] = [:]
        for line in runtime.split(separator: "\n") where line.hasPrefix("ENV ") {
            for pair in line.dropFirst(4).split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { environment[String(parts[0])] = String(parts[1]) }
            }
        }
        return environment
    }

    /// `docker-compose config` (Debian's docker-compose, which needs no engine for it) accepts the file with and
    /// without the example profile; the sandbox answers under Apple's names, and the example backend trusts the
    /// sandbox CA from the shared volume with its own code unchanged.
    @Test func composeFileIsValid() async throws {
        let root = TestPaths.packageRoot
        let quiet = try await run("/usr/bin/env", args: ["docker-compose", "-f", root + "/docker-compose.yml", "config", "-q"])
        #expect(quiet.status == 0, "\(quiet)")
        let example = try await run("/usr/bin/env", args: [
            "docker-compose", "-f", root + "/docker-compose.yml", "--profile", "example", "config",
        ])
        #expect(example.status == 0, "\(example)")
        let text = example.stdoutText
        for alias in ["api.sandbox.push.apple.com", "api.development.push.apple.com", "api.push.apple.com"] {
            #expect(text.contains("- \(alias)"), "alias \(alias): \(text)")
        }
        #expect(text.contains("example-backend:") && text.contains("SSL_CERT_FILE: /sandbox/ca.pem"))
        #expect(text.contains("sandbox-data:/sandbox:ro") && text.contains("condition: service_healthy"))
        let backendImage = try String(contentsOfFile: root + "/Examples/backend/Dockerfile", encoding: .utf8)
        #expect(backendImage.contains("COPY send.py"), "the image runs the send.py the suite runs")
        let requirements = try String(contentsOfFile: root + "/Tests/Python/requirements.txt", encoding: .utf8)
        #expect(backendImage.contains("aioapns==4.0") && requirements.contains("aioapns==4.0"))
    }

    /// The Kubernetes example parses (PyYAML) and exposes the image's ports.
    @Test func kubernetesExampleParses() async throws {
        let script = """
            import json, sys, yaml
            docs = list(yaml.safe_load_all(open(sys.argv[1])))
            ports = [p['containerPort'] for p in docs[0]['spec']['template']['spec']['containers'][0]['ports']]
            print(json.dumps({'kinds': [d['kind'] for d in docs], 'ports': ports,
                              'service': [p['port'] for p in docs[1]['spec']['ports']]}))
            """
        let output = try await run("/usr/bin/env", args: [
            "python3", "-c", script, TestPaths.packageRoot + "/Examples/kubernetes/apns-sandbox.yaml",
        ])
        #expect(output.status == 0, "\(output)")
        let parsed = try JSONSerialization.jsonObject(with: output.stdout) as? [String: [AnyHashable]]
        #expect(parsed?["kinds"] == ["Deployment", "Service", "Pod"])
        #expect(parsed?["ports"] == [443, 2197, 8080] && parsed?["service"] == [443, 2197, 8080])
    }

    /// The image's settings (its ENV over the shipped config/sandbox.json) listen for TLS on 443 and 2197 on
    /// every interface, and the build stage installs with the same script CI runs.
    @Test func imageSettingsListenOnApplesPorts() throws {
        let environment = try Self.dockerfileEnvironment()
        #expect(environment["APNS_SANDBOX_TLS_PORT"] == "443,2197", "\(environment)")
        var configuration = try SandboxConfiguration.load(path: TestPaths.packageRoot + "/config/sandbox.json")
        try configuration.applyEnvironment(environment)
        try configuration.validate()
        #expect(configuration.listeners.filter(\.tls).map(\.port) == [443, 2197])
        #expect(configuration.listeners.filter { !$0.tls }.map(\.port) == [8080])
        #expect(configuration.listeners.allSatisfy { $0.host == "::" })
        let dockerfile = try String(contentsOfFile: TestPaths.packageRoot + "/Dockerfile", encoding: .utf8)
        #expect(dockerfile.contains("RUN scripts/setup "), "the build stage installs with scripts/setup, as CI does")
        #expect(dockerfile.contains("setcap cap_net_bind_service=+p /staging/apns-sandbox"))
        #expect(dockerfile.contains("USER apns") && dockerfile.contains("EXPOSE 443 2197 8080"))
    }

    /// What the container does, on this machine: a copy of the binary with the image's capability (permitted, not
    /// effective), run as a non-root user with the image's ENV and the shipped config, serves TLS on 443 and 2197
    /// and holds no capability once its listeners are bound; the example
    /// backend with the compose file's settings (demo key, the CA as SSL_CERT_FILE) pushes through 443.
    /// Needs root (to set the capability and change user), as CI runs.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/setcap")))
    func nonRootServerWithTheImagesCapabilityServesPort443() async throws {
        let directory = try makeTemporaryDirectory("container")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = FileManager.default
        let binary = directory + "/apns-sandbox"
        try files.copyItem(atPath: try GracefulShutdownTests.executable(), toPath: binary)
        try files.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        let key = directory + "/keys/AuthKey_DEMOKEY123.p8"
        try files.copyItem(atPath: TestPaths.packageRoot + "/config/keys/AuthKey_DEMOKEY123.p8", toPath: key)
        try files.copyItem(atPath: TestPaths.packageRoot + "/config/sandbox.json", toPath: directory + "/sandbox.json")
        try files.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        for path in [directory, directory + "/keys", directory + "/data", key, directory + "/sandbox.json"] {
            #expect(chmod(path, path.hasSuffix(".p8") || path.hasSuffix(".json") ? 0o644 : 0o755) == 0)
        }
        #expect(chown(directory + "/data", 65534, 65534) == 0)
        let capability = try await run("/usr/sbin/setcap", args: ["cap_net_bind_service=+p", binary])
        #expect(capability.status == 0, "\(capability)")

        var environment = try Self.dockerfileEnvironment()
        environment["APNS_SANDBOX_HOST"] = "127.0.0.1"  // loopback here; the image listens on every interface
        environment["APNS_SANDBOX_DATA_DIR"] = directory + "/data"
        environment["APNS_SANDBOX_CONFIG"] = directory + "/sandbox.json"
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"]
        let (server, httpPort) = try await GracefulShutdownTests.startServing("/usr/bin/setpriv", environment: environment) { port in
            ["--reuid", "65534", "--regid", "65534", "--clear-groups", binary, "serve", "--config", directory + "/sandbox.json",
             "--http-port", String(port)]
        }
        defer { server.send(signal: SIGKILL); _ = server.finish(timeout: 5) }
        // The capability is permitted only (+p): the server raised it to bind 443, then gave it up for good.
        let status = try String(contentsOfFile: "/proc/\(server.pid)/status", encoding: .utf8)
        let sets = status.split(separator: "\n").filter { $0.hasPrefix("CapPrm:") || $0.hasPrefix("CapEff:") }
        #expect(sets.count == 2 && sets.allSatisfy { $0.hasSuffix("0000000000000000") }, "\(sets)")

        let sender = try await run("/usr/bin/env", args: [
            "python3", TestPaths.packageRoot + "/Tests/Python/example_backend.py", "--port", "443",
        ], timeout: 30, environment: ProcessInfo.processInfo.environment.merging([
            "SSL_CERT_FILE": directory + "/data/ca.pem", "APNS_KEY_FILE": key, "APNS_KEY_ID": "DEMOKEY123",
            "APNS_TEAM_ID": "DEMOTEAM01", "APNS_TOPIC": "com.example.app",
        ]) { _, new in new })
        #expect(sender.status == 0 && sender.stdoutText.contains(#""status": "200""#), "\(sender)")
        let alternative = try await curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", directory + "/data/ca.pem",
            "--resolve", "api.push.apple.com:2197:127.0.0.1", "https://api.push.apple.com:2197/healthz",
        ])
        #expect(alternative.stdoutText == "200", "\(alternative)")
        // The server ran as nobody: the CA it generated is nobody's.
        let owner = try files.attributesOfItem(atPath: directory + "/data/ca.pem")[.ownerAccountID] as? NSNumber
        #expect(owner?.intValue == 65534)
        #expect(try await healthz(port: httpPort)?.status == 200)
    }
}
