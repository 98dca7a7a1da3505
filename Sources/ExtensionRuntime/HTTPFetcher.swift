// APNs Sandbox — HTTP requests of the extension runtime (attach-media downloads, webhook calls).
import Foundation
import Glibc
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bounded, cancellable HTTP requests over one `URLSession` (FoundationNetworking, libcurl underneath;
/// http:// and https:// with the system's CA store).
///
/// Bodies stream into memory or into a file and the transfer is cancelled as soon as it exceeds its byte
/// limit, so a large download never sits in memory. The session is made on first use, so a runtime that
/// never fetches starts no network thread. Completion handlers run on the session's delegate queue.
final class HTTPFetcher: Sendable {
    struct Request: Sendable {
        var url: String
        var method = "GET"
        var headers: [(String, String)] = []
        var body: [UInt8]?
        var timeoutMilliseconds: Int64
    }

    enum Destination: Sendable {
        case memory
        /// A new file at this path (created, truncated).
        case file(String)
    }

    struct Response: Sendable {
        var status: Int
        /// The body when the destination was memory.
        var body: [UInt8]
        var byteCount: Int
    }

    enum Failure: Error, Sendable, CustomStringConvertible {
        case invalidURL(String)
        case cancelled
        case tooLarge(limit: Int)
        case file(String)
        case transport(String)

        var description: String {
            switch self {
            case .invalidURL(let url): "invalid URL \(url)"
            case .cancelled: "cancelled"
            case .tooLarge(let limit): "response larger than \(limit) bytes"
            case .file(let problem): problem
            case .transport(let problem): problem
            }
        }
    }

    /// Cancels a request; its completion then reports ``Failure/cancelled`` (unless it already finished).
    struct Handle: Sendable {
        fileprivate let transfer: Transfer?

        func cancel() { transfer?.cancel() }
    }

    private let delegate = Delegate()
    private let session = Mutex<URLSession?>(nil)

    deinit {
        session.withLock { $0?.invalidateAndCancel() }
    }

    /// Starts `request`; `completion` runs exactly once.
    @discardableResult
    func fetch(
        _ request: Request, into destination: Destination, maxBytes: Int,
        completion: @escaping @Sendable (Result<Response, Failure>) -> Void
    ) -> Handle {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host != nil
        else {
            completion(.failure(.invalidURL(request.url)))
            return Handle(transfer: nil)
        }
        var fd: Int32 = -1
        if case .file(let path) = destination {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                completion(.failure(.file(FileSystemError("open", path).description)))
                return Handle(transfer: nil)
            }
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: Double(max(1, request.timeoutMilliseconds)) / 1000)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let session = self.session.withLock { session -> URLSession in
            if let session { return session }
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 64
            configuration.urlCache = nil
            configuration.httpCookieStorage = nil
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            queue.name = "apns-sandbox.extension.http"
            let made = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
            session = made
            return made
        }
        let task = session.dataTask(with: urlRequest)
        let transfer = Transfer(task: task, fd: fd, maxBytes: maxBytes, completion: completion)
        delegate.register(transfer, for: task.taskIdentifier)
        task.resume()
        return Handle(transfer: transfer)
    }

    // MARK: Transfers

    /// One request in flight.
    ///
    /// `@unchecked Sendable`: `task` is a `URLSessionTask`, whose `cancel()` is thread-safe but which the
    /// Linux overlay does not mark `Sendable`; every mutable field sits in `state`.
    fileprivate final class Transfer: @unchecked Sendable {
        private let task: URLSessionTask
        private let maxBytes: Int
        private let completion: @Sendable (Result<Response, Failure>) -> Void

        private struct State {
            var fd: Int32
            var status = 0
            var body: [UInt8] = []
            var count = 0
            var failure: Failure?
            var isDone = false
        }

        private let state: Mutex<State>

        init(task: URLSessionTask, fd: Int32, maxBytes: Int,
             completion: @escaping @Sendable (Result<Response, Failure>) -> Void) {
            self.task = task
            self.maxBytes = maxBytes
            self.completion = completion
            state = Mutex(State(fd: fd))
        }

        func cancel() {
            let cancel = state.withLock { state -> Bool in
                guard !state.isDone, state.failure == nil else { return false }
                state.failure = .cancelled
                return true
            }
            if cancel { task.cancel() }
        }

        func received(status: Int) {
            state.withLock { $0.status = status }
        }

        func received(_ data: Data) {
            let overflow = state.withLock { state -> Bool in
                guard state.failure == nil, !state.isDone else { return false }
                state.count += data.count
                guard state.count <= maxBytes else {
                    state.failure = .tooLarge(limit: maxBytes)
                    return true
                }
                if state.fd >= 0 {
                    let fd = state.fd
                    let written = data.withUnsafeBytes { raw -> Bool in
                        var offset = 0
                        while offset < raw.count {
                            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                            if n < 0, errno == EINTR { continue }
                            guard n > 0 else { return false }
                            offset += n
                        }
                        return true
                    }
                    if !written {
                        state.failure = .file("writing the download failed: \(String(cString: strerror(errno)))")
                        return true
                    }
                } else {
                    state.body.append(contentsOf: data)
                }
                return false
            }
            if overflow { task.cancel() }
        }

        func completed(error: (any Error)?) {
            let result = state.withLock { state -> Result<Response, Failure>? in
                guard !state.isDone else { return nil }
                state.isDone = true
                if state.fd >= 0 {
                    close(state.fd)
                    state.fd = -1
                }
                if let failure = state.failure { return .failure(failure) }
                if let error { return .failure(.transport(error.localizedDescription)) }
                return .success(Response(status: state.status, body: state.body, byteCount: state.count))
            }
            if let result { completion(result) }
        }
    }

    /// Routes `URLSession` callbacks to their transfers.
    ///
    /// `@unchecked Sendable`: an `NSObject` subclass cannot be checked, but its only state is the `Mutex`.
    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let transfers = Mutex<[Int: Transfer]>([:])

        func register(_ transfer: Transfer, for identifier: Int) {
            transfers.withLock { $0[identifier] = transfer }
        }

        private func transfer(_ task: URLSessionTask) -> Transfer? {
            transfers.withLock { $0[task.taskIdentifier] }
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            transfer(dataTask)?.received(status: (response as? HTTPURLResponse)?.statusCode ?? 0)
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            transfer(dataTask)?.received(data)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
            transfer?.completed(error: error)
        }
    }
}
