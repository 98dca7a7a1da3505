// APNs Sandbox — the transfer thread of an HTTP client: queued requests in, completions out.
import Foundation
import Support
import Synchronization

/// The state an ``HTTPClient`` shares with its transfer thread.
///
/// Requests and cancellations are queued under `state`'s lock; the thread takes them, drives every transfer
/// with ``CurlMulti``, and completes each transfer exactly once: whoever removes a request from the queue
/// (a cancel before it started) or from the thread's table (it finished, was cancelled, or the client
/// closed) calls its completion, with no lock held.
final class TransferLoop: Sendable {
    typealias Completion = @Sendable (Result<HTTPClient.Response, HTTPClient.Failure>) -> Void

    private struct Queued {
        var id: UInt64
        var request: HTTPClient.Request
        var completion: Completion
    }

    private struct State {
        var queued: [Queued] = []
        var cancelled: [UInt64] = []
        var nextID: UInt64 = 0
        var isStarted = false
        var isClosed = false
    }

    /// A transfer on the thread: its handle, its body and who to tell.
    private final class Active {
        let easy: CurlEasy
        let sink: BodySink
        let completion: Completion

        init(easy: CurlEasy, sink: BodySink, completion: @escaping Completion) {
            self.easy = easy
            self.sink = sink
            self.completion = completion
        }

        func finish(_ result: Result<HTTPClient.Response, HTTPClient.Failure>) {
            sink.close()
            completion(result)
        }
    }

    private let configuration: HTTPClient.Configuration
    private let multi: CurlMulti
    private let state = Locked(State())
    private let stopped = DispatchSemaphore(value: 0)

    init(configuration: HTTPClient.Configuration) {
        self.configuration = configuration
        multi = CurlMulti(maxConnections: configuration.maxConnections, maxConnectionsPerHost: configuration.maxConnectionsPerHost)
    }

    /// Queues a request (starting the thread the first time); nil once the client is closed.
    func enqueue(_ request: HTTPClient.Request, completion: @escaping Completion) -> UInt64? {
        let (id, startThread) = state.withLock { state -> (UInt64?, Bool) in
            guard !state.isClosed else { return (nil, false) }
            state.nextID &+= 1
            state.queued.append(Queued(id: state.nextID, request: request, completion: completion))
            defer { state.isStarted = true }
            return (state.nextID, !state.isStarted)
        }
        guard let id else { return nil }
        if startThread {
            Thread { [self] in run() }.start()
        }
        multi.wakeup()
        return id
    }

    /// Cancels a request: at once when it is still queued, else on the thread (if it has not finished).
    func cancel(_ id: UInt64) {
        let queued = state.withLock { state -> Queued? in
            if let index = state.queued.firstIndex(where: { $0.id == id }) { return state.queued.remove(at: index) }
            if !state.isClosed { state.cancelled.append(id) }
            return nil
        }
        if let queued {
            queued.completion(.failure(.cancelled))
        } else {
            multi.wakeup()
        }
    }

    /// Refuses new requests and ends the thread, which fails what it holds; `waiting`: until it has.
    func close(waiting: Bool) {
        let isRunning = state.withLock { state -> Bool in
            defer { state.isClosed = true }
            return !state.isClosed && state.isStarted
        }
        guard isRunning else { return }
        multi.wakeup()
        if waiting { stopped.wait() }
    }

    // MARK: - The transfer thread

    private func run() {
        // The kernel's name (/proc, `top -H`): Foundation's `Thread.name` does not reach it on Linux.
        CurrentThread.setName(configuration.threadName)
        CurrentThread.setNiceness(configuration.niceness)
        var active: [UInt64: Active] = [:]
        while true {
            let (requests, cancelled, isClosed) = state.withLock { state -> ([Queued], [UInt64], Bool) in
                defer {
                    state.queued = []
                    state.cancelled = []
                }
                return (state.queued, state.cancelled, state.isClosed)
            }
            if isClosed {
                for request in requests { request.completion(.failure(.shutDown)) }
                for transfer in active.values {
                    multi.remove(transfer.easy)
                    transfer.finish(.failure(.shutDown))
                }
                stopped.signal()
                return
            }
            for request in requests {
                if let transfer = start(request) { active[request.id] = transfer }
            }
            for id in cancelled {
                guard let transfer = active.removeValue(forKey: id) else { continue }
                multi.remove(transfer.easy)
                transfer.finish(.failure(.cancelled))
            }
            for (easy, result) in multi.perform() {
                guard let transfer = active.removeValue(forKey: easy.tag) else { continue }
                transfer.finish(Self.outcome(of: transfer, result))
            }
            multi.wait(milliseconds: 1000)
        }
    }

    /// A transfer added to the multi handle, or nil (its completion has run).
    private func start(_ request: Queued) -> Active? {
        let sink = BodySink(
            destination: request.request.destination, limit: request.request.maxResponseBytes, onChunk: request.request.onChunk)
        if let failure = sink.open() {
            request.completion(.failure(failure))
            return nil
        }
        guard let easy = CurlEasy(
            tag: request.id, request: request.request, caFile: configuration.caFile,
            usesProxyEnvironment: configuration.usesProxyEnvironment, clientCertificate: configuration.clientCertificate,
            onData: { sink.receive($0) })
        else {
            sink.close()
            request.completion(.failure(.transport("curl_easy_init failed")))
            return nil
        }
        let transfer = Active(easy: easy, sink: sink, completion: request.completion)
        guard multi.add(easy) else {
            transfer.finish(.failure(.transport("curl_multi_add_handle failed")))
            return nil
        }
        return transfer
    }

    private static func outcome(of transfer: Active, _ result: CurlResult) -> Result<HTTPClient.Response, HTTPClient.Failure> {
        if let failure = transfer.sink.failure { return .failure(failure) }
        switch result.kind {
        case .ok:
            return .success(HTTPClient.Response(
                status: transfer.easy.responseCode, body: transfer.sink.body, byteCount: transfer.sink.count))
        case .tooLarge:
            return .failure(.tooLarge(limit: transfer.sink.limit))
        case .failed:
            return .failure(.transport(result.message))
        }
    }
}
