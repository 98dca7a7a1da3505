// (placeholder for the merge with branch conn-faults, which implements it)
public enum ConnectionFault: Sendable, Equatable {
    case goAway(errorCode: UInt32, debugData: [UInt8])
    case resetStream(errorCode: UInt32)
    case close
    case stall(nanoseconds: UInt64?)
    case trickle(bytesPerChunk: Int, intervalNanoseconds: UInt64)
    case limitConcurrentStreams(to: UInt32, forNanoseconds: UInt64)
}
