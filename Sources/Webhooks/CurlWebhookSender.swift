// APNs Sandbox — webhook requests over libcurl's multi interface, on one low-priority thread.
import CCurl
import CLinuxSystem
import Foundation
import Glibc
import Synchronization

/// ``WebhookSending`` over libcurl's multi interface: one dedicated thread runs every transfer, with
/// keep-alive connections kept in the multi handle's pool.
///
/// ### Why not URLSession
/// URLSession on Linux is built on the same libcurl, but adds Foundation objects, dispatch queues and
/// several thread hops per request; at thousands of deliveries per second that work competed with the
/// push path for the CPU. Here a request is an easy handle, a header list and one wake-up, and the
/// thread runs at a lower scheduling priority (nice 10), so webhooks lag under load instead of slowing
/// pushes down.
///
/// Redirects are not followed (a 3xx is a failed attempt, as Standard Webhooks senders do); `Expect:
/// 100-continue` is switched off; the timeout covers the whole request. `https://` uses libcurl's
/// OpenSSL with the system CA store.
///
/// `@unchecked Sendable`: `multi` and the easy handles are used only on the transfer thread, except
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread; `state` is behind a `Mutex`.
public final class CurlWebhookSender: WebhookSending, @unchecked Sendable {
    private struct Request {
        var url: String
        var headers: [(String, String)]
        var body: [UInt8]
        var timeoutMilliseconds: Int64
        var completion: @Sendable (WebhookSendResult) -> Void
    }

    private struct State {
        var queued: [Request] = []
        var isStarted = false
        var isClosed = false
    }

    /// A transfer in progress: what must be freed and who must be told when it ends.
    private final class Transfer {
        let easy: UnsafeMutableRawPointer
        let headers: UnsafeMutablePointer<curl_slist>?
        let completion: @Sendable (WebhookSendResult) -> Void

        init(easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?,
             completion: @escaping @Sendable (WebhookSendResult) -> Void) {
            self.easy = easy
            self.headers = headers
            self.completion = completion
        }
    }

    private let multi: UnsafeMutableRawPointer
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    private let niceness: Int32

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    /// A sender whose transfer thread starts with ``start()``; requests posted before then wait for it.
    /// - Parameter niceness: The transfer thread's nice value (0 = the server's priority).
    public init(niceness: Int32 = WebhookDispatcher.niceness) {
        _ = Self.globalInit
        guard let multi = curl_multi_init() else {
            // Only fails when libcurl cannot allocate its handle.
            preconditionFailure("curl_multi_init failed")
        }
        self.multi = multi
        self.niceness = niceness
        // No per-host cap: requests beyond it would wait inside libcurl with their timeout running (several
        // subscriptions may share a host); the dispatcher already bounds requests per subscription.
        _ = CCurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 256)
    }

    /// Starts the transfer thread (`webhook-transfers`), which runs until ``shutdown()``. Later calls, and
    /// calls after ``shutdown()``, do nothing.
    public func start() {
        let starts = state.withLock { state -> Bool in
            guard !state.isStarted, !state.isClosed else { return false }
            state.isStarted = true
            return true
        }
        guard starts else { return }
        let thread = Thread { [self] in run() }
        thread.name = "webhook-transfers"
        thread.start()
    }

    deinit {
        curl_multi_cleanup(multi)
    }

    public func post(
        url: URL, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64,
        completion: @escaping @Sendable (WebhookSendResult) -> Void
    ) {
        let request = Request(
            url: url.absoluteString, headers: headers, body: body, timeoutMilliseconds: timeoutMilliseconds,
            completion: completion)
        let accepted = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.queued.append(request)
            return true
        }
        guard accepted else { return completion(.failed("the sender is shut down")) }
        curl_multi_wakeup(multi)
    }

    /// Ends the transfers in flight (their completions report a failure) and stops the thread. A sender that
    /// was never started fails what was posted to it.
    public func shutdown() {
        let (wasOpen, wasStarted, unsent) = state.withLock { state -> (Bool, Bool, [Request]) in
            defer { state.isClosed = true }
            guard !state.isClosed else { return (false, false, []) }
            if state.isStarted { return (true, true, []) }
            defer { state.queued = [] }
            return (true, false, state.queued)
        }
        guard wasOpen else { return }
        guard wasStarted else {
            for request in unsent { request.completion(.failed("the sender is shut down")) }
            return
        }
        curl_multi_wakeup(multi)
        finished.wait()
    }

    // MARK: - The transfer thread

    private func run() {
        // The kernel's name (/proc, `top -H`): Foundation's `Thread.name` does not reach it on Linux.
        _ = CLinuxSystem_set_thread_name("webhook-sender")
        _ = CLinuxSystem_set_thread_niceness(niceness)
        var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
        while true {
            let (requests, isClosed) = state.withLock { state -> ([Request], Bool) in
                defer { state.queued = [] }
                return (state.queued, state.isClosed)
            }
            if isClosed {
                for request in requests { request.completion(.failed("the sender is shut down")) }
                for transfer in transfers.values { end(transfer, result: .failed("the sender is shut down")) }
                finished.signal()
                return
            }
            for request in requests {
                if let transfer = start(request) { transfers[transfer.easy] = transfer }
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                var code = CURLE_OK
                guard let easy = CCurl_multi_done(message, &code), let transfer = transfers.removeValue(forKey: easy)
                else { continue }
                if code == CURLE_OK {
                    var status = 0
                    _ = CCurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                    end(transfer, result: .answered(status: status))
                } else {
                    end(transfer, result: .failed(String(cString: curl_easy_strerror(code))))
                }
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }

    private static let discardBody: CCurl_write_callback = { _, size, count, _ in size * count }

    /// A configured easy handle added to the multi handle, or nil (the completion has been called).
    private func start(_ request: Request) -> Transfer? {
        guard let easy = curl_easy_init() else {
            request.completion(.failed("curl_easy_init failed"))
            return nil
        }
        var headers: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers {
            headers = curl_slist_append(headers, "\(name): \(value)")
        }
        // libcurl would otherwise wait up to a second for `100 Continue` before bodies over 1 KiB.
        headers = curl_slist_append(headers, "Expect:")
        let timeout = max(1, request.timeoutMilliseconds)
        _ = CCurl_easy_setopt_string(easy, CURLOPT_URL, request.url)
        _ = CCurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = CCurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = CCurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(timeout))
        _ = CCurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(min(timeout, 10_000)))
        _ = CCurl_easy_setopt_long(easy, CURLOPT_POST, 1)
        _ = CCurl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        request.body.withUnsafeBytes { bytes in
            // COPYPOSTFIELDS copies POSTFIELDSIZE bytes now; an empty body still needs a valid pointer.
            _ = CCurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)))
        }
        _ = CCurl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers))
        _ = CCurl_easy_setopt_write_function(easy, Self.discardBody)
        let transfer = Transfer(easy: easy, headers: headers, completion: request.completion)
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else {
            end(transfer, result: .failed("curl_multi_add_handle failed"), added: false)
            return nil
        }
        return transfer
    }

    private func end(_ transfer: Transfer, result: WebhookSendResult, added: Bool = true) {
        if added { curl_multi_remove_handle(multi, transfer.easy) }
        curl_easy_cleanup(transfer.easy)
        curl_slist_free_all(transfer.headers)
        transfer.completion(result)
    }
}
