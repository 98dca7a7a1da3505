// APNs Sandbox — how the extension runtime's downloads and webhook calls use the HTTP client.
import HTTPClient

/// The rules every outbound request of the runtime follows (attach-media downloads, webhook extensions).
enum ExtensionHTTP {
    /// Redirects to `http://` and `https://` are followed, at most 20 (URLSession's rule and limit, which the
    /// runtime used before; a `POST` continues as `GET` after a 301, 302 or 303).
    static let redirects = HTTPClient.RedirectPolicy.follow(limit: 20)

    /// How much later than its caller's own deadline a transfer is ended by the client. The caller's timer
    /// (the step's timeout, the webhook's `timeoutMs`, the budget) decides and reports; the transfer's limit
    /// only makes sure nothing outlives it, without racing it.
    static let backstopMilliseconds: Int64 = 1_000

    /// A request that follows redirects, decodes compressed bodies, and ends `timeoutMilliseconds` plus the
    /// backstop after it starts.
    static func request(
        url: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeoutMilliseconds: Int64, maxBytes: Int, into destination: HTTPClient.Destination
    ) -> HTTPClient.Request {
        HTTPClient.Request(
            url: url, method: method, headers: headers, body: body,
            timeoutMilliseconds: timeoutMilliseconds + backstopMilliseconds, redirects: redirects,
            maxResponseBytes: maxBytes, destination: destination, decodesContent: true)
    }
}
