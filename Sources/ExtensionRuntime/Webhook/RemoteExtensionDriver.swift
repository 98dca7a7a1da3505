// APNs Sandbox — a remote extension (`"kind": "webhook"` in an app's serviceExtension): the request is
// POSTed, the response body is the content. ("Webhook" in the code means the event webhooks of the Webhooks module.)
import APNsProtocol
import HTTPClient
import Sandbox
import Synchronization
import Support

/// POSTs the exec protocol's `request` message (`Content-Type: application/json`) to the configured URL.
///
/// A 200 response's body is the `content` object (a whole `{"type":"content","content":{…}}` message is
/// accepted too). Any other status, a body that is not content, or the request's own `timeoutMs` running
/// out is an error (`original-error`). There is nothing to tell a webhook at `timeWillExpire`: a response
/// within the grace period is a `best-attempt`; at budget + grace the request is cancelled
/// (`original-timeout`).
final class RemoteExtensionDriver: InstanceDriver {
    private let settings: ExtensionConfiguration.RemoteSettings
    private let http: HTTPClient
    private let inFlight = Locked<(handle: HTTPClient.Handle?, timer: ScheduledTask?)>((nil, nil))

    init(settings: ExtensionConfiguration.RemoteSettings, http: HTTPClient) {
        self.settings = settings
        self.http = http
    }

    func start(_ instance: Instance) {
        let context = instance.context
        let body = Array(ExecDriver.requestMessage(context).serialized.utf8)
        let timeout = settings.timeoutMilliseconds ?? (context.budgetMilliseconds + context.graceMilliseconds + 1_000)
        let request = ExtensionHTTP.request(
            url: settings.url, method: "POST",
            headers: [("Content-Type", "application/json"), ("Accept", "application/json"),
                      ("APNs-Sandbox-Instance", context.id), ("APNs-Sandbox-APNs-ID", context.record.apnsID)],
            body: body, timeoutMilliseconds: timeout, maxBytes: context.settings.maxWebhookResponseBytes,
            into: .memory)
        let started = instance.clock.monotonicNanoseconds
        let handle = http.send(request) { result in
            instance.queue.async { Self.answered(result, started: started, timeout: timeout, instance) }
        }
        // The transfer's own limit is a backstop (``ExtensionHTTP/backstopMilliseconds`` later): this timer
        // decides.
        let timer = settings.timeoutMilliseconds.map { milliseconds in
            instance.clock.schedule(afterMilliseconds: milliseconds) {
                instance.queue.async {
                    handle.cancel()
                    guard !instance.isDecided else { return }
                    instance.fail(.error("webhook did not answer within its timeout of \(milliseconds) ms"))
                }
            }
        }
        inFlight.withLock { $0 = (handle, timer) }
    }

    func timeWillExpire(_ instance: Instance) {}

    func settle(_ instance: Instance, decision: InstanceStateMachine.Decision, done: @escaping @Sendable () -> Void) {
        let (handle, timer) = inFlight.withLock { $0 }
        timer?.cancel()
        handle?.cancel()
        done()
    }

    private static func answered(
        _ result: Result<HTTPClient.Response, HTTPClient.Failure>, started: UInt64, timeout: Int64,
        _ instance: Instance
    ) {
        let elapsed = (instance.clock.monotonicNanoseconds &- started) / 1_000_000
        switch result {
        case .failure(.cancelled):
            return
        case .failure(let failure):
            report(error: "webhook request failed after \(elapsed) ms (timeout \(timeout) ms): \(failure)", instance)
        case .success(let response) where response.status != 200:
            report(error: "webhook answered HTTP \(response.status) after \(elapsed) ms: "
                   + String(decoding: response.body.prefix(200), as: UTF8.self), instance)
        case .success(let response):
            switch ExtensionMessage.webhookBody(response.body) {
            case .success(let content):
                instance.note(.log, "webhook answered HTTP 200 after \(elapsed) ms")
                instance.contentHandlerCalled(content)
            case .failure(let problem):
                report(error: problem.description, instance)
            }
        }
    }

    private static func report(error message: String, _ instance: Instance) {
        if instance.isDecided {
            instance.note(.outputIgnored, message)
        } else {
            instance.fail(.error(message))
        }
    }
}
