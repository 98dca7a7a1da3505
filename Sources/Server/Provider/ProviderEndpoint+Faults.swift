// APNs Sandbox — what a fault rule does to the provider endpoint's HTTP answer: its connection effect, its latency.
import HTTP
import Intake
import Sandbox

extension FaultEffect {
    /// The connection fault the answer carries (stall, trickle, a stream cut; GOAWAY, reset and close
    /// instead of an answer).
    var connectionFault: ConnectionFault? {
        switch action {
        case .goAway(let reason, let errorCode):
            .goAway(errorCode: errorCode, debugData: Array(#"{"reason":"\#(reason)"}"#.utf8))
        case .resetStream(let errorCode): .resetStream(errorCode: errorCode)
        case .closeConnection: .close
        case .stall(let milliseconds): .stall(nanoseconds: milliseconds.map { UInt64($0) * 1_000_000 })
        case .trickle(let bytes, let interval):
            .trickle(bytesPerChunk: bytes, intervalNanoseconds: UInt64(interval) * 1_000_000)
        case .limitConcurrentStreams(let to, let milliseconds):
            .limitConcurrentStreams(to: to, forNanoseconds: UInt64(milliseconds) * 1_000_000)
        case .reject, .deliver, .none: nil
        }
    }
}

extension ProviderEndpoint {
    /// Sends `response` after `milliseconds` of real time (a fault's latency), or at once.
    func answer(_ response: HTTPResponse, after milliseconds: Int64, _ respond: @escaping @Sendable (HTTPResponse) -> Void) {
        guard milliseconds > 0 else { return respond(response) }
        realTime.schedule(afterMilliseconds: milliseconds) { respond(response) }
    }
}
