// APNs Sandbox — benchmark, not a test: the HTTP client against URLSession, same server, same run.
import Dispatch
import Foundation
import Glibc
import HTTPClient
import Support
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs only with `HTTP_CLIENT_BENCH=1` (`scripts/bench-http-client`); `N` requests per run (default 5000),
/// `INFLIGHT` at once in the concurrent runs (default 16).
///
/// Both clients talk to one ``LoopbackServer`` (the sandbox's own HTTP/1.1 stack, keep-alive, one event
/// loop) in the same process: GETs of a 64-byte body and POSTs of a 600-byte JSON body answered 204 (a
/// webhook delivery), one in flight and `INFLIGHT` in flight. Each case runs twice per client, alternating
/// (URLSession, HTTPClient, URLSession, HTTPClient), after a warm-up; the better run of each is reported:
/// requests per second and the process's CPU time per request (server included, the same for both).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["HTTP_CLIENT_BENCH"] != nil))
struct HTTPClientBenchmark {
    private static let environment = ProcessInfo.processInfo.environment
    private static let count = Int(environment["N"] ?? "") ?? 5000
    private static let inFlight = Int(environment["INFLIGHT"] ?? "") ?? 16
    private static let payload = Array(("{\"type\":\"notification.displayed\",\"data\":{\"apnsId\":\"" + String(repeating: "a", count: 520) + "\"}}").utf8)

    /// One way to send a request: calls back with the status (0 for a failure).
    typealias Sender = @Sendable (_ post: Bool, _ done: @escaping @Sendable (Int) -> Void) -> Void

    @Test func compareWithURLSession() throws {
        let server = try LoopbackServer()
        let client = HTTPClient()
        defer { client.shutdown() }
        let session = URLSessionReference()
        let getURL = server.url("/small")
        let postURL = server.url("/hook")
        let curl: Sender = { post, done in
            let request = post
                ? HTTPClient.Request(url: postURL, method: "POST", headers: [("content-type", "application/json")],
                                     body: Self.payload, timeoutMilliseconds: 10_000, destination: .discard)
                : HTTPClient.Request(url: getURL, timeoutMilliseconds: 10_000)
            client.send(request) { result in done((try? result.get())?.status ?? 0) }
        }
        let foundation: Sender = { post, done in
            session.send(url: post ? postURL : getURL, body: post ? Self.payload : nil, done: done)
        }
        print("HTTP client benchmark: N=\(Self.count) per run, \(Self.inFlight) in flight in the concurrent runs")
        print("| case | URLSession req/s | HTTPClient (libcurl) req/s | ratio | CPU µs/req URLSession | HTTPClient |")
        print("|---|---:|---:|---:|---:|---:|")
        for (name, post, parallel) in [("GET 64 B, 1 in flight", false, 1), ("GET 64 B, \(Self.inFlight) in flight", false, Self.inFlight),
                                       ("POST 600 B → 204, 1 in flight", true, 1), ("POST 600 B → 204, \(Self.inFlight) in flight", true, Self.inFlight)] {
            _ = try Self.measure(foundation, post: post, parallel: parallel, count: 200)
            _ = try Self.measure(curl, post: post, parallel: parallel, count: 200)
            var best: [(rate: Double, cpu: Double)] = [(0, .infinity), (0, .infinity)]
            for _ in 0..<2 {
                for (index, sender) in [foundation, curl].enumerated() {
                    let run = try Self.measure(sender, post: post, parallel: parallel, count: Self.count)
                    best[index] = (max(best[index].rate, run.rate), min(best[index].cpu, run.cpu))
                }
            }
            print(String(format: "| %@ | %.0f | %.0f | **%.2f** | %.0f | %.0f |", name, best[0].rate, best[1].rate,
                         best[1].rate / best[0].rate, best[0].cpu, best[1].cpu))
        }
    }

    /// `count` requests, `parallel` at a time: requests per second and CPU µs per request.
    private static func measure(_ send: Sender, post: Bool, parallel: Int, count: Int) throws -> (rate: Double, cpu: Double) {
        let slots = DispatchSemaphore(value: parallel)
        let group = DispatchGroup()
        let failures = Atomic<Int>(0)
        let cpuBefore = cpuMicroseconds()
        let start = MonotonicClock.nanoseconds()
        for _ in 0..<count {
            slots.wait()
            group.enter()
            send(post) { status in
                if !(200..<300).contains(status) { failures.add(1, ordering: .relaxed) }
                slots.signal()
                group.leave()
            }
        }
        group.wait()
        let seconds = Double(MonotonicClock.nanoseconds() - start) / 1e9
        let cpu = Double(cpuMicroseconds() - cpuBefore) / Double(count)
        #expect(failures.load(ordering: .relaxed) == 0)
        return (Double(count) / seconds, cpu)
    }

    private static func cpuMicroseconds() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec
    }
}

/// The URLSession client the extension runtime used before the HTTP client (its `HTTPFetcher`, reduced to
/// what the benchmark needs): an ephemeral session, up to 64 connections per host, no cache or cookies, one
/// serial delegate queue, data tasks whose bodies stream through the delegate.
///
/// `@unchecked Sendable`: the session is immutable after `init`; the per-task state is behind a `Mutex`.
final class URLSessionReference: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Transfer {
        var status = 0
        var bytes = 0
        var done: @Sendable (Int) -> Void
    }

    private let tasks = Locked<[Int: Transfer]>([:])
    private var session: URLSession!

    override init() {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    deinit { session.invalidateAndCancel() }

    func send(url: String, body: [UInt8]?, done: @escaping @Sendable (Int) -> Void) {
        var request = URLRequest(url: URL(string: url)!, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 10)
        if let body {
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "content-type")
            request.httpBody = Data(body)
        }
        let task = session.dataTask(with: request)
        tasks.withLock { $0[task.taskIdentifier] = Transfer(done: done) }
        task.resume()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        tasks.withLock { $0[dataTask.taskIdentifier]?.status = status }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        tasks.withLock { $0[dataTask.taskIdentifier]?.bytes += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let finished = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        finished.done(error == nil ? finished.status : 0)
    }
}
