// APNs Sandbox — the registry's background load: lookups in order, damaged rows, stopping.
import APNsProtocol
import Dispatch
import Foundation
import Sandbox
@testable import Server
import Store
import Support
import Synchronization
import Testing

@Suite struct RegistryLoaderTests {
    private static func token(_ index: Int) -> String { String(format: "%08x", index) + String(repeating: "a9", count: 28) }

    /// 10 stored devices, 2 a batch, the load held after the first. A push to a token not loaded yet goes through a
    /// lookup; while that push is still on the lookup queue, a later push to the same token must queue behind it
    /// even though the lookup has already settled the token (else the later one could be accepted first). Stopping
    /// ends the held load once released, and a lookup after the stop answers false at once.
    @Test func aLaterPushQueuesBehindAnEarlierOneAndStopEndsTheLoad() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/sandbox.sqlite")
        defer { store.close() }
        for index in 0..<10 {
            try store.saveDevice(DeviceRecord(
                token: Self.token(index), environment: .development,
                apps: [InstalledAppRecord(bundleID: "com.a", installedAt: 1)]))
        }
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        let loader = RegistryLoader(
            registry: registry, devices: store, logger: Logger(label: "loader", level: .error, sink: .capturing()))
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        loader.tune { tuning in
            tuning.batchSize = 2
            tuning.beforeBatch = { loaded in
                if loaded == 2 {
                    held.signal()
                    release.wait()
                }
            }
        }
        try loader.start()
        #expect(held.wait(timeout: .now() + 10) == .success)
        let late = try #require(DeviceToken(hex: Self.token(7)))
        #expect(registry.isLoading && registry.deviceCount == 2)
        let loaded = try #require(DeviceToken(hex: Self.token(0)))
        #expect(loader.mustWait(late) && !loader.mustWait(loaded))

        let (inThen, leaveThen, done) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        loader.fill(late) { found in
            #expect(found)
            inThen.signal()
            leaveThen.wait()
        }
        #expect(inThen.wait(timeout: .now() + 10) == .success)
        #expect(!registry.needsLookup(late), "the lookup settled it")
        #expect(loader.mustWait(late), "an earlier push to it is still on the lookup queue")
        let order = OrderLog()
        loader.fill(late) { found in
            order.append(found ? "second" : "second, not found")
            done.signal()
        }
        order.append("first")
        leaveThen.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(order.entries == ["first", "second"])
        // Its count goes right after `then` returns.
        let deadline = Date().addingTimeInterval(10)
        while loader.mustWait(late), Date() < deadline { usleep(1_000) }
        #expect(!loader.mustWait(late))
        #expect(registry.resolve(token: late, environment: .development, bundleID: "com.a", now: 2) == nil)

        release.signal()
        loader.stop()
        let answered = DispatchSemaphore(value: 0)
        let stoppedAnswer = OrderLog()
        loader.fill(try #require(DeviceToken(hex: Self.token(99)))) { found in
            stoppedAnswer.append("\(found)")
            answered.signal()
        }
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(stoppedAnswer.entries == ["false"])
    }
}

/// Strings appended from any thread, in order.
private final class OrderLog: Sendable {
    private let list = Locked<[String]>([])
    func append(_ entry: String) { list.withLock { $0.append(entry) } }
    var entries: [String] { list.withLock { $0 } }
}
