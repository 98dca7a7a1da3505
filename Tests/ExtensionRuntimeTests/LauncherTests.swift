// APNs Sandbox — the exec launcher: a bounded number of tickets, handed out in order.
import Dispatch
import Synchronization
import Testing

@testable import ExtensionRuntime

@Suite struct LauncherTests {
    /// Tickets are spread over the queues, never more than `ticketsPerQueue` on one; the rest wait in
    /// order and get a ticket as soon as one is given back.
    @Test func ticketsAreBoundedAndHandedOutInOrder() throws {
        let launcher = Launcher(queues: 2, ticketsPerQueue: 2)
        let granted = Mutex<[(call: Int, ticket: Launcher.Ticket, waited: Bool)]>([])
        for call in 0..<10 {
            launcher.reserve { ticket, waited in granted.withLock { $0.append((call, ticket, waited)) } }
        }
        let first = granted.withLock { $0 }
        #expect(first.map(\.call) == [0, 1, 2, 3])
        #expect(first.allSatisfy { !$0.waited })
        #expect(Set(first.map { ObjectIdentifier($0.ticket.queue) }).count == 2)
        #expect(launcher.waitingCount == 6)

        first[1].ticket.release()
        #expect(waitUntil { granted.withLock { $0.count } == 5 })
        let fifth = try #require(granted.withLock { $0.last })
        #expect(fifth.call == 4 && fifth.waited)
        #expect(fifth.ticket.queue === first[1].ticket.queue)  // the ticket given back, on its queue

        for entry in granted.withLock({ $0 }) where entry.call != 1 { entry.ticket.release() }
        #expect(waitUntil { granted.withLock { $0.count } == 9 })
        #expect(Set(granted.withLock { $0.map(\.call) }) == Set(0..<9))
        #expect(launcher.waitingCount == 1)
    }

    /// A waiter that gives its ticket back at once (an instance that ended while waiting) passes it on
    /// without recursion, however many are in line.
    @Test func ticketsGivenBackAtOncePassAlong() {
        let launcher = Launcher(queues: 1, ticketsPerQueue: 1)
        let held = Mutex<Launcher.Ticket?>(nil)
        launcher.reserve { ticket, _ in held.withLock { $0 = ticket } }
        let passed = Atomic<Int>(0)
        for _ in 0..<20_000 {
            launcher.reserve { ticket, _ in
                passed.add(1, ordering: .relaxed)
                ticket.release()
            }
        }
        held.withLock { $0 }?.release()
        #expect(waitUntil(seconds: 30) { passed.load(ordering: .relaxed) == 20_000 })
        #expect(launcher.waitingCount == 0)
    }
}
