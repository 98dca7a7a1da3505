// APNs Sandbox — webhook requests over the HTTP client (libcurl), on one low-priority thread.
import Foundation
import HTTPClient

/// ``WebhookSending`` over an ``HTTPClient`` of its own: one transfer thread at a lower scheduling priority
/// (nice 10), so webhooks lag under load instead of slowing pushes down, with keep-alive connections
/// pooled per receiver.
///
/// Redirects are not followed (a 3xx is a failed attempt, as Standard Webhooks senders do); the answer's
/// body is read and discarded; the timeout covers the whole request. `https://` is verified against the
/// system CA store, or against `caFile` when given.
public final class CurlWebhookSender: WebhookSending {
    private let client: HTTPClient

    /// - Parameters:
    ///   - niceness: The transfer thread's nice value (0 = the server's priority).
    ///   - caFile: A PEM file of the CAs receivers' certificates are verified against; nil: the system's.
    public init(niceness: Int32 = WebhookDispatcher.niceness, caFile: String? = nil) {
        client = HTTPClient(configuration: HTTPClient.Configuration(
            threadName: "webhook-http", niceness: niceness, caFile: caFile))
    }

    public func post(
        url: URL, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64,
        completion: @escaping @Sendable (WebhookSendResult) -> Void
    ) {
        let request = HTTPClient.Request(
            url: url.absoluteString, method: "POST", headers: headers, body: body,
            timeoutMilliseconds: timeoutMilliseconds, redirects: .refuse, destination: .discard)
        client.send(request) { result in
            switch result {
            case .success(let response): completion(.answered(status: response.status))
            case .failure(.shutDown): completion(.failed("the sender is shut down"))
            case .failure(let failure): completion(.failed(failure.description))
            }
        }
    }

    /// Ends the transfers in flight (their completions report a failure) and stops the thread.
    public func shutdown() {
        client.shutdown()
    }
}
