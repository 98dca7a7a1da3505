// APNs Sandbox — the one outbound HTTP client: libcurl's multi interface on one thread.
import Foundation

/// Outbound HTTP/1.1 and HTTP/2 requests (`http://`, `https://`) over libcurl's multi interface, every
/// transfer of a client on one thread of its own, with keep-alive connections in the multi handle's pool.
///
/// Used for the webhook deliveries (``Request/redirects`` refused, body discarded) and the extension
/// runtime's downloads and webhook extensions (redirects followed, bodies into memory or a file).
///
/// ### Why libcurl and not URLSession
/// URLSession on Linux is built on the same libcurl, but adds Foundation objects, dispatch queues and
/// several thread hops per request, and on Linux it trusts only the system CA store and times requests
/// out in whole seconds. `scripts/bench-http-client` measures both against the same loopback server
/// (BENCHMARKS.md, "Outbound HTTP client").
///
/// ### Threads
/// ``send(_:completion:)`` and ``Handle/cancel()`` may be called from any thread and never block: they
/// queue work under a lock and wake the transfer thread (`curl_multi_wakeup`). The thread starts with the
/// first request, so a client that never sends starts none, and runs at ``Configuration/niceness``.
/// Completions run on that thread (or at once on the caller's, for a request that cannot start or is
/// cancelled before its transfer started):
/// they must only hop to the caller's own queue, or every other transfer of the client waits, and must
/// never call ``shutdown()``, which waits for that very thread.
///
/// ### Lifecycle
/// ``shutdown()`` fails every request queued or in flight (``Failure/shutDown``), refuses later ones and
/// waits for the thread to end. A client released without a shutdown does the same without waiting.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// The transfer thread's name.
        public var threadName: String
        /// The transfer thread's nice value (0 = the server's priority; 10 lets it lag under load).
        public var niceness: Int32
        /// Idle connections kept for reuse.
        public var maxConnections: Int
        /// Connections open to one host at once (`CURLMOPT_MAX_HOST_CONNECTIONS`); further requests to it wait
        /// inside libcurl, their timeouts running. nil: no cap.
        public var maxConnectionsPerHost: Int?
        /// A PEM file of the certificate authorities `https://` servers are verified against; nil: the
        /// system's store.
        public var caFile: String?
        /// Whether `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` apply (libcurl's default); false
        /// for a client that only ever talks to this machine.
        public var usesProxyEnvironment = true
        /// A client certificate presented to `https://` servers that ask for one (APNs' certificate
        /// authentication); nil: none.
        public var clientCertificate: ClientCertificate?

        public init(
            threadName: String = "http-client", niceness: Int32 = 0, maxConnections: Int = 256,
            maxConnectionsPerHost: Int? = nil, caFile: String? = nil
        ) {
            self.threadName = threadName
            self.niceness = niceness
            self.maxConnections = maxConnections
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.caFile = caFile
        }
    }

    /// A PEM certificate and its PEM private key, as files.
    public struct ClientCertificate: Sendable {
        public var certificateFile: String
        public var privateKeyFile: String

        public init(certificateFile: String, privateKeyFile: String) {
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
        }
    }

    public let configuration: Configuration
    private let loop: TransferLoop

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        loop = TransferLoop(configuration: configuration)
    }

    deinit {
        loop.close(waiting: false)
    }

    /// Starts `request`; `completion` runs exactly once.
    /// - Returns: A handle that cancels the request.
    @discardableResult
    public func send(
        _ request: Request, completion: @escaping @Sendable (Result<Response, Failure>) -> Void
    ) -> Handle {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host?.isEmpty == false
        else {
            completion(.failure(.invalidURL(request.url)))
            return Handle {}
        }
        // libcurl gets the URL as Foundation parsed it (a space in a media URL percent-encoded, as URLSession
        // sent it), not the text as given.
        var request = request
        request.url = url.absoluteString
        guard let id = loop.enqueue(request, completion: completion) else {
            completion(.failure(.shutDown))
            return Handle {}
        }
        return Handle { [weak loop] in loop?.cancel(id) }
    }

    /// Fails what is queued or in flight, refuses new requests, and waits for the transfer thread to end.
    public func shutdown() {
        loop.close(waiting: true)
    }
}
