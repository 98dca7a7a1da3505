// APNs Sandbox — live fan-out of logged events to Server-Sent Events subscribers, with resume.
import CLinuxSystem
import Dispatch
import Foundation
import Glibc
import HTTP
import Sandbox
import Support
import Synchronization

/// Sends every committed event to the SSE streams whose filter matches.
///
/// ### Resume without gaps
/// A stream that starts after event `n` (its `Last-Event-ID`) first *catches up*: it reads the log
/// after `n` in pages on a background queue and writes those events. Meanwhile live events are not
/// sent to it. When a page comes back short, it checks under the lock whether the hub has published
/// anything newer than what it read; if so it reads again (those events are already committed, so
/// the log has them), else it turns *live* at that id. Live streams get each new event once, in id
/// order, because the store publishes in commit order on one serial queue.
///
/// ### Slow readers
/// Each stream's ``HTTPBodyWriter`` bounds what waits for a slow client; past the bound the stream is
/// ended and the client reconnects with `Last-Event-ID`, losing nothing.
final class EventStreamHub: Sendable {
    private struct Subscriber {
        let filter: EventFilter
        let writer: HTTPBodyWriter
        /// nil while catching up; else the last id considered.
        var liveAfter: Int64?
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 1
        /// The newest id published so far.
        var lastPublished: Int64 = 0
        var isClosed = false
    }

    private let log: any EventLogRepository
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "event-stream-hub")
    private let heartbeatNanoseconds: UInt64
    private let logger: Logger
    /// Events per page while catching up.
    static let pageSize = 500

    init(log: any EventLogRepository, heartbeatSeconds: Double, logger: Logger) {
        self.log = log
        self.heartbeatNanoseconds = UInt64(max(0.05, heartbeatSeconds) * 1e9)
        self.logger = logger
        state.withLock { $0.lastPublished = (try? log.latestEventID()) ?? 0 }
        scheduleHeartbeat()
    }

    /// The newest event id published (the id a new stream without `Last-Event-ID` starts after).
    var lastPublishedID: Int64 { state.withLock { $0.lastPublished } }

    /// Committed events, in id order. Called by the store's observer; the work happens on the hub's queue.
    func publish(_ events: [SandboxEvent]) {
        queue.async { [self] in
            state.withLock { state in
                guard let last = events.last else { return }
                state.lastPublished = max(state.lastPublished, last.id)
                guard !state.subscribers.isEmpty else { return }
                var frames: [Int64: [UInt8]] = [:]
                for (key, subscriber) in state.subscribers {
                    guard let after = subscriber.liveAfter else { continue }
                    var bytes: [UInt8] = []
                    for event in events where event.id > after && subscriber.filter.matches(event) {
                        if frames[event.id] == nil { frames[event.id] = Self.frame(event) }
                        bytes += frames[event.id] ?? []
                    }
                    // Never backwards: a stream that went live after a later batch was committed must not
                    // get that batch again when it is published.
                    state.subscribers[key]?.liveAfter = max(after, last.id)
                    if !bytes.isEmpty { subscriber.writer.write(bytes) }
                }
            }
        }
    }

    /// Starts a stream: the events after `lastEventID` (nil: only new ones) matching `filter`, then live ones.
    func subscribe(filter: EventFilter, after lastEventID: Int64?, writer: HTTPBodyWriter) {
        let key = state.withLock { state -> UInt64? in
            guard !state.isClosed else { return nil }
            defer { state.nextID += 1 }
            state.subscribers[state.nextID] = Subscriber(filter: filter, writer: writer, liveAfter: nil)
            return state.nextID
        }
        guard let key else {
            writer.finish()
            return
        }
        writer.onClose { [self] in
            _ = state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        // `retry` tells EventSource clients how soon to reconnect (ms).
        writer.write(Array("retry: 2000\n: connected\n\n".utf8))
        // A resume id beyond the log (a reset data directory) resumes from the present.
        let start = min(lastEventID ?? Int64.max, lastPublishedID)
        // Its own thread: catching up waits for a slow client to read (below), which must not hold a
        // dispatch worker.
        Thread { [self] in
            // The kernel's name (what /proc and debuggers show), set from the thread itself.
            _ = CLinuxSystem_set_thread_name("sse-catch-up")
            catchUp(key, filter: filter, after: start, writer: writer)
        }.start()
    }

    private func catchUp(_ key: UInt64, filter: EventFilter, after start: Int64, writer: HTTPBodyWriter) {
        var cursor = start
        while !writer.isClosed {
            // Everything published so far is committed: a short page below has scanned up to here,
            // matching or not (without this, a filter matching none of the newest events never caught up).
            let published = lastPublishedID
            let page: [SandboxEvent]
            do {
                page = try log.events(after: cursor, matching: filter, limit: Self.pageSize)
            } catch {
                logger.warning("reading the event log for a stream failed", [("error", "\(error)")])
                writer.finish()
                return
            }
            if !page.isEmpty {
                writer.write(page.flatMap(Self.frame))
                cursor = page.last?.id ?? cursor
            }
            if page.count == Self.pageSize {
                // Let a slow client read before the next page, or its buffer overflows and it has to
                // reconnect: catching up is paced by the reader.
                while writer.pendingByteCount > Self.catchUpPendingBytes, !writer.isClosed {
                    usleep(5_000)
                }
                continue
            }
            cursor = max(cursor, published)
            // Caught up with the log as read: go live unless something newer has been published since.
            let isLive = state.withLock { state -> Bool in
                guard state.lastPublished <= cursor else { return false }
                state.subscribers[key]?.liveAfter = cursor
                return true
            }
            if isLive { return }
        }
    }

    /// Bytes of a catching-up stream that may wait for its reader before the next page is read.
    static let catchUpPendingBytes = 1 << 20

    /// Ends every stream (server shutdown) and refuses new ones.
    func close() {
        let writers = state.withLock { state in
            state.isClosed = true
            return state.subscribers.values.map(\.writer)
        }
        for writer in writers { writer.finish() }
    }

    private func scheduleHeartbeat() {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(heartbeatNanoseconds))) { [self] in
            let writers = state.withLock { state -> [HTTPBodyWriter]? in
                state.isClosed ? nil : state.subscribers.values.map(\.writer)
            }
            guard let writers else { return }
            let beat = Array(": heartbeat\n\n".utf8)
            for writer in writers { writer.write(beat) }
            scheduleHeartbeat()
        }
    }

    /// One SSE event: `id`, `event` (the type) and `data` (the envelope, one line of JSON).
    static func frame(_ event: SandboxEvent) -> [UInt8] {
        var bytes = Array("id: \(event.id)\nevent: \(event.type.rawValue)\ndata: ".utf8)
        // Raw line breaks in JSON can only be whitespace between tokens (a payload as the provider sent
        // it); inside an SSE `data` line they would end the field, so they become spaces.
        bytes += event.envelope.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
        bytes += [0x0A, 0x0A]
        return bytes
    }
}
