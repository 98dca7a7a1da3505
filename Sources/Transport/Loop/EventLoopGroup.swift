// APNs Sandbox — a set of event loops, one per core by default.
import Foundation

/// Owns `count` event loops and stops them together.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]

    /// - Parameter count: number of loops; 0 means one per active processor.
    public init(count: Int = 0) throws {
        let n = count > 0 ? count : max(1, ProcessInfo.processInfo.activeProcessorCount)
        self.loops = try (0..<n).map { try EventLoop(index: $0) }
    }

    /// Stops every loop and waits for their threads to exit.
    public func shutdown() {
        for loop in loops { loop.stop() }
        for loop in loops { loop.waitUntilStopped() }
    }
}
