// APNs Sandbox — how the dispatcher sends one webhook attempt (``CurlWebhookSender`` does it for real).
import Foundation

/// Sends one attempt and reports its answer.
public protocol WebhookSending: Sendable {
    /// POSTs `body` with `headers` to `url`; `completion` runs once, on any thread.
    func post(
        url: URL, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64,
        completion: @escaping @Sendable (WebhookSendResult) -> Void)
}

/// What one attempt got back.
public enum WebhookSendResult: Sendable, Equatable {
    /// An HTTP answer (any status; redirects are not followed and count as answers).
    case answered(status: Int)
    /// No answer: connection refused, timeout, TLS failure.
    case failed(String)
}
