// APNs Sandbox — services start in order, stop in reverse, and a failed start unwinds.
import Support
import Synchronization
import Testing

/// What the services of one test did, in order (`start a`, `stop a`).
private final class Journal: Sendable {
    private let entries = Locked<[String]>([])

    var lines: [String] { entries.withLock { $0 } }

    func note(_ line: String) { entries.withLock { $0.append(line) } }

    /// A service that notes its start and stop, and fails to start when `failing`.
    func service(_ name: String, failing: Bool = false) -> ServiceStep {
        ServiceStep(
            name,
            start: {
                self.note("start \(name)")
                if failing { throw Failure(name: name) }
            },
            stop: { self.note("stop \(name)") })
    }
}

private struct Failure: Error, Equatable {
    let name: String
}

@Suite struct ServiceGroupTests {
    /// Members start in the order given and stop in the reverse order.
    @Test func startsInOrderAndStopsInReverse() throws {
        let journal = Journal()
        let group = ServiceGroup("test", services: ["a", "b", "c"].map { journal.service($0) })
        try group.start()
        #expect(journal.lines == ["start a", "start b", "start c"])
        #expect(group.startedServices == ["a", "b", "c"])
        group.stop()
        #expect(journal.lines == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        #expect(group.startedServices.isEmpty)
    }

    /// A member whose start throws is not stopped; the ones started before it are, newest first, and the
    /// member's own error comes out; later members never start.
    @Test func aFailedStartStopsWhatStartedAndRethrows() {
        let journal = Journal()
        let group = ServiceGroup("test", services: [
            journal.service("a"), journal.service("b"), journal.service("c", failing: true), journal.service("d"),
        ])
        #expect(throws: Failure(name: "c")) { try group.start() }
        #expect(journal.lines == ["start a", "start b", "start c", "stop b", "stop a"])
        #expect(group.startedServices.isEmpty)
        group.stop()
        #expect(journal.lines.count == 5, "the unwound members are not stopped again")
    }

    /// A second stop (and a third, from other threads) stops nothing more; a group never started stops nothing.
    @Test func stopIsIdempotent() async throws {
        let journal = Journal()
        let group = ServiceGroup("test", services: [journal.service("a"), journal.service("b")])
        try group.start()
        group.stop()
        await withTaskGroup(of: Void.self) { tasks in
            for _ in 0..<4 { tasks.addTask { group.stop() } }
        }
        #expect(journal.lines == ["start a", "start b", "stop b", "stop a"])

        let idle = Journal()
        let never = ServiceGroup("idle", services: [idle.service("a")])
        never.stop()
        #expect(idle.lines.isEmpty)
    }

    /// A group starts once: a second start, or a start after a stop, throws and starts nothing.
    @Test func startsOnce() throws {
        let journal = Journal()
        let group = ServiceGroup("test", services: [journal.service("a")])
        try group.start()
        #expect(throws: ServiceGroupError.self) { try group.start() }
        group.stop()
        #expect(throws: ServiceGroupError.self) { try group.start() }
        #expect(journal.lines == ["start a", "stop a"])
    }

    /// Groups nest: an inner group is one member, started in its place and stopped in its place; a failure
    /// inside it unwinds the inner members and then the outer ones.
    @Test func groupsNest() throws {
        let journal = Journal()
        let inner = ServiceGroup("inner", services: [journal.service("b"), journal.service("c")])
        let outer = ServiceGroup("outer", services: [journal.service("a"), inner, journal.service("d")])
        try outer.start()
        outer.stop()
        #expect(journal.lines == [
            "start a", "start b", "start c", "start d", "stop d", "stop c", "stop b", "stop a",
        ])

        let failing = Journal()
        let broken = ServiceGroup("outer", services: [
            failing.service("a"),
            ServiceGroup("inner", services: [failing.service("b"), failing.service("c", failing: true)]),
            failing.service("d"),
        ])
        #expect(throws: Failure(name: "c")) { try broken.start() }
        #expect(failing.lines == ["start a", "start b", "start c", "stop b", "stop a"])
    }
}
