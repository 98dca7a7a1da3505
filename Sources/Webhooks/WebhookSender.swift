// APNs Sandbox — the HTTP POST of one webhook attempt (URLSession, i.e. libcurl underneath).
import Dispatch
import Synchronization
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

/// ``WebhookSending`` over one shared `URLSession`.
///
/// Redirects are not followed (a 3xx is a failed attempt, as Standard Webhooks senders do); the
/// timeout is enforced with a timer of our own because URLSession's is an idle timeout in whole
/// seconds on Linux. URLSession on Linux trusts only the system CA store for `https://` endpoints.
public final class URLSessionWebhookSender: NSObject, WebhookSending, URLSessionTaskDelegate, @unchecked Sendable {
    // `@unchecked Sendable`: an NSObject subclass cannot be checked; `session` is immutable after init
    // and URLSession is thread-safe.
    private var session: URLSession!

    /// - Parameter maxConnectionsPerHost: At least the dispatcher's per-endpoint concurrency.
    public init(maxConnectionsPerHost: Int = 16) {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    deinit {
        session?.invalidateAndCancel()
    }

    public func post(
        url: URL, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64,
        completion: @escaping @Sendable (WebhookSendResult) -> Void
    ) {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        // A backstop; the timer below is the real limit.
        request.timeoutInterval = max(1, Double(timeoutMilliseconds) / 1000 + 1)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let once = CompletionOnce(completion)
        let task = session.dataTask(with: request) { _, response, error in
            if let http = response as? HTTPURLResponse {
                once.call(.answered(status: http.statusCode))
            } else {
                once.call(.failed(error.map { Self.describe($0) } ?? "no HTTP response"))
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(timeoutMilliseconds))) {
            if once.call(.failed("no answer within \(timeoutMilliseconds) ms")) { task.cancel() }
        }
        task.resume()
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    private static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        return nsError.localizedDescription.isEmpty ? "\(error)" : nsError.localizedDescription
    }
}

/// Calls a completion at most once, whichever of the answer and the timeout comes first.
private final class CompletionOnce: Sendable {
    private let completion: @Sendable (WebhookSendResult) -> Void
    private let done = Mutex(false)

    init(_ completion: @escaping @Sendable (WebhookSendResult) -> Void) {
        self.completion = completion
    }

    /// Returns whether this call was the first.
    @discardableResult
    func call(_ result: WebhookSendResult) -> Bool {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        if first { completion(result) }
        return first
    }
}
