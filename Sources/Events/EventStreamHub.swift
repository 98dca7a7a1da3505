// APNs Sandbox — live fan-out of logged events to Server-Sent Events subscribers, with resume.
import Dispatch
import Foundation
import Glibc
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
/// Each stream's ``EventStreamWriter`` bounds what waits for a slow client (`limits.eventStreamBufferBytes`);
/// past the bound the stream is ended and the client reconnects with `Last-Event-ID`, losing nothing.
/// Catching up writes the log in pieces paced by the reader, within that bound.
///
/// ### Capacity
/// A stream takes a slot (``reserve(client:)``) before its response starts: at most
/// `limits.maxEventStreams` streams are open, and `limits.maxEventStreamsPerClient` from one IP
/// address; beyond, the request is refused (503 and 429). The slot is given back when the stream ends.
public final class EventStreamHub: Sendable {
    /// How many streams may be open (each stream's buffer is its writer's, `limits.eventStreamBufferBytes`).
    public struct Capacity: Sendable {
        public var maxStreams: Int
        public var maxStreamsPerClient: Int

        public init(maxStreams: Int = 1000, maxStreamsPerClient: Int = 100) {
            self.maxStreams = maxStreams
            self.maxStreamsPerClient = maxStreamsPerClient
        }
    }

    /// Why a stream was refused.
    public enum Refusal: Error, Equatable {
        /// `maxStreams` streams are open.
        case serverFull(Int)
        /// `maxStreamsPerClient` streams of this client are open.
        case clientFull(Int)
    }

    /// One open (or starting) stream's place in the capacity; given back once, by ``release()`` or
    /// when the slot is dropped (a response that never started).
    public final class Slot: Sendable {
        private let onRelease: @Sendable () -> Void
        private let released = Atomic<Bool>(false)

        init(onRelease: @escaping @Sendable () -> Void) {
            self.onRelease = onRelease
        }

        public func release() {
            if !released.exchange(true, ordering: .acquiringAndReleasing) { onRelease() }
        }

        deinit { release() }
    }

    private struct Subscriber {
        let filter: EventFilter
        let writer: any EventStreamWriter
        /// nil while catching up; else the last id considered.
        var liveAfter: Int64?
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 1
        /// The newest id published so far.
        var lastPublished: Int64 = 0
        var isStarted = false
        var isClosed = false
        /// Slots taken, overall and per client address.
        var slots = 0
        var slotsPerClient: [String: Int] = [:]
    }

    private let log: any EventLogRepository
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "event-stream-hub")
    private let heartbeatNanoseconds: UInt64
    private let logger: Logger
    public let capacity: Capacity
    /// Events per page while catching up.
    public static let pageSize = 500

    public init(log: any EventLogRepository, heartbeatSeconds: Double, capacity: Capacity = Capacity(), logger: Logger) {
        self.log = log
        self.capacity = capacity
        self.heartbeatNanoseconds = UInt64(max(0.05, heartbeatSeconds) * 1e9)
        self.logger = logger
    }

    /// Reads where the event log ends (a stream without `Last-Event-ID` starts after it; the store must be
    /// open) and starts the heartbeat, which runs until ``close()``. Once; later calls do nothing.
    public func start() {
        let latest = (try? log.latestEventID()) ?? 0
        let isFirst = state.withLock { state -> Bool in
            guard !state.isStarted, !state.isClosed else { return false }
            state.isStarted = true
            // Events published before (by recovery or seeding) count too.
            state.lastPublished = max(state.lastPublished, latest)
            return true
        }
        if isFirst { scheduleHeartbeat() }
    }

    /// The newest event id published (the id a new stream without `Last-Event-ID` starts after).
    public var lastPublishedID: Int64 { state.withLock { $0.lastPublished } }

    /// Committed events, in id order. Called by the store's observer; the work happens on the hub's queue.
    public func publish(_ events: [SandboxEvent]) {
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

    /// Streams open (or starting) now.
    public var openStreams: Int { state.withLock { $0.slots } }

    /// Takes a slot for a stream of `client` (an IP address).
    /// - Throws: ``Refusal`` when the server or this client has no slot left.
    public func reserve(client: String) throws(Refusal) -> Slot {
        try state.withLock { (state) throws(Refusal) in
            guard state.slots < capacity.maxStreams else { throw .serverFull(capacity.maxStreams) }
            let taken = state.slotsPerClient[client, default: 0]
            guard taken < capacity.maxStreamsPerClient else { throw .clientFull(capacity.maxStreamsPerClient) }
            state.slots += 1
            state.slotsPerClient[client] = taken + 1
        }
        return Slot { [self] in
            state.withLock { state in
                state.slots -= 1
                let left = state.slotsPerClient[client, default: 1] - 1
                state.slotsPerClient[client] = left > 0 ? left : nil
            }
        }
    }

    /// Starts a stream: the events after `lastEventID` (nil: only new ones) matching `filter`, then live ones.
    /// `slot` (from ``reserve(client:)``) is given back when the stream ends.
    public func subscribe(filter: EventFilter, after lastEventID: Int64?, writer: any EventStreamWriter, slot: Slot? = nil) {
        writer.onClose { slot?.release() }
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
            CurrentThread.setName("sse-catch-up")
            catchUp(key, filter: filter, after: start, writer: writer)
        }.start()
    }

    private func catchUp(_ key: UInt64, filter: EventFilter, after start: Int64, writer: any EventStreamWriter) {
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
                guard Self.writePaced(page.map(Self.frame), to: writer) else { return }
                cursor = page.last?.id ?? cursor
            }
            if page.count == Self.pageSize { continue }
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

    /// Writes `frames` in pieces of at most a quarter of the writer's buffer, each once the reader has
    /// made room for it: catching up is paced by the reader and never overflows its buffer (which would
    /// end the stream). False when the stream ended meanwhile.
    public static func writePaced(_ frames: [[UInt8]], to writer: any EventStreamWriter) -> Bool {
        let piece = max(1, writer.maxBufferedBytes / 4)
        var pending: [UInt8] = []
        func flush() -> Bool {
            // A reader that takes its time is looked at less and less often (5 ms up to 100 ms): a slow
            // stream costs about ten wake-ups a second, not two hundred.
            var pause: UInt32 = 5_000
            while writer.pendingByteCount + pending.count > writer.maxBufferedBytes {
                if writer.isClosed { return false }
                usleep(pause)
                pause = min(pause * 2, 100_000)
            }
            guard writer.write(pending) else { return false }
            pending.removeAll(keepingCapacity: true)
            return true
        }
        for frame in frames {
            pending += frame
            if pending.count >= piece, !flush() { return false }
        }
        return pending.isEmpty || flush()
    }

    /// Ends every stream (server shutdown) and the heartbeat, and refuses new streams. Idempotent.
    public func close() {
        let writers = state.withLock { state in
            state.isClosed = true
            return state.subscribers.values.map(\.writer)
        }
        for writer in writers { writer.finish() }
    }

    private func scheduleHeartbeat() {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(heartbeatNanoseconds))) { [self] in
            let writers = state.withLock { state -> [any EventStreamWriter]? in
                state.isClosed ? nil : state.subscribers.values.map(\.writer)
            }
            guard let writers else { return }
            let beat = Array(": heartbeat\n\n".utf8)
            for writer in writers { writer.write(beat) }
            scheduleHeartbeat()
        }
    }

    /// One SSE event: `id`, `event` (the type) and `data` (the envelope, one line of JSON).
    public static func frame(_ event: SandboxEvent) -> [UInt8] {
        var bytes = Array("id: \(event.id)\nevent: \(event.type.rawValue)\ndata: ".utf8)
        // Raw line breaks in JSON can only be whitespace between tokens (a payload as the provider sent
        // it); inside an SSE `data` line they would end the field, so they become spaces.
        bytes += event.envelope.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
        bytes += [0x0A, 0x0A]
        return bytes
    }
}
