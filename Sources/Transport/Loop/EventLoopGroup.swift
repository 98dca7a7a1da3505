// APNs Sandbox — a set of event loops, one per core by default.
import Foundation

/// Owns `count` event loops and stops them together.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]

    /// Creates the loops and starts their threads.
    /// - Parameter count: number of loops; 0 means one per active processor.
    /// - Throws: When a loop cannot be created; the loops created before it are stopped again.
    public init(count: Int = 0) throws {
        let n = count > 0 ? count : max(1, ProcessInfo.processInfo.activeProcessorCount)
        var loops: [EventLoop] = []
        do {
            for index in 0..<n { loops.append(try EventLoop(index: index)) }
        } catch {
            for loop in loops { loop.stop() }
            for loop in loops { loop.waitUntilStopped() }
            throw error
        }
        self.loops = loops
    }

    /// Stops every loop and waits for their threads to exit.
    public func shutdown() {
        for loop in loops { loop.stop() }
        for loop in loops { loop.waitUntilStopped() }
    }
}
