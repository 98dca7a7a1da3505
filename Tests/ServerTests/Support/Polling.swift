// APNs Sandbox — end-to-end test support: polling for a condition within a generous, scaled deadline.
import Foundation
import TestProcessSupport

/// Polls `probe` every 20 ms until it gives a value, and returns it; throws, naming `what` (said then), once
/// `seconds` of real time have passed. The deadline is generous and scaled: the poll ends as soon as the value is
/// there, so only a failure waits that long, and a machine busy with the rest of the suite cannot make a slow
/// success look like a failure (a count of polls — 100 × 20 ms — could).
func pollFor<T>(
    _ what: @autoclosure () -> String, within seconds: Double = TestTime.seconds(30), _ probe: () async throws -> T?
) async throws -> T {
    let deadline = monotonicSeconds() + seconds
    while true {
        if let value = try await probe() { return value }
        guard monotonicSeconds() < deadline else { throw ProcessError("timed out after \(seconds) s waiting for \(what())") }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
}

/// Polls `condition` every 20 ms until it holds; throws, naming `what`, once `seconds` of real time have passed
/// (generous and scaled, as ``pollFor(_:within:_:)``).
func pollUntil(
    _ what: @autoclosure () -> String, within seconds: Double = TestTime.seconds(30), _ condition: () async throws -> Bool
) async throws {
    _ = try await pollFor(what(), within: seconds) { try await condition() ? true : nil }
}
