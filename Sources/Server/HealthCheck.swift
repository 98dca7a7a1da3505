// APNs Sandbox — the `healthcheck` command: one GET, waited for.
import Dispatch
import HTTPClient
import Synchronization
import Support

/// `apns-sandbox healthcheck` (Docker's HEALTHCHECK, where no curl is installed): one GET through the
/// outbound ``HTTPClient``, redirects not followed.
public enum HealthCheck {
    /// Fetches `url` (`http://host:port/path`) and returns the status code, or nil on any failure (no
    /// answer within `timeoutSeconds`, a refused connection, an invalid URL).
    public static func status(url: String, timeoutSeconds: Int = 3) -> Int? {
        // Only `http://` (as the hand-written client it replaced), and never through a proxy from the
        // environment: a container's `http_proxy` must not turn its own health check into a remote request.
        guard url.lowercased().hasPrefix("http://") else { return nil }
        var configuration = HTTPClient.Configuration(threadName: "healthcheck", maxConnections: 1)
        configuration.usesProxyEnvironment = false
        let client = HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        let answered = DispatchSemaphore(value: 0)
        let status = Locked<Int?>(nil)
        let request = HTTPClient.Request(
            url: url, timeoutMilliseconds: Int64(timeoutSeconds) * 1000, maxResponseBytes: 64 * 1024,
            destination: .discard)
        client.send(request) { result in
            status.withLock { $0 = (try? result.get())?.status }
            answered.signal()
        }
        answered.wait()
        return status.withLock { $0 }
    }

    /// `http://<host>:<port>/healthz` of the first cleartext listener of `configuration`; a listener on every
    /// address (`::` is dual-stack, `0.0.0.0`) is asked on 127.0.0.1. Nil when every listener is TLS.
    public static func defaultURL(for configuration: SandboxConfiguration) -> String? {
        guard let listener = configuration.listeners.first(where: { !$0.tls }) else { return nil }
        let host: String = switch listener.host {
        case "::", "0.0.0.0", "", "[::]": "127.0.0.1"
        case let address where address.contains(":") && !address.hasPrefix("["): "[\(address)]"
        case let address: address
        }
        return "http://\(host):\(listener.port)/healthz"
    }
}
