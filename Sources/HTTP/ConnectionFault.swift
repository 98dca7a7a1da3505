// APNs Sandbox — what a handler asks the connection to do with its response (the sandbox's fault injection).

/// What a handler asks the connection to do with its response (the sandbox's fault injection).
///
/// Set on ``HTTPResponse/connectionFault``; HTTP/2 (`HTTP2ConnectionHandler+Faults.swift`) and HTTP/1.1
/// (`HTTP1ConnectionHandler+Faults.swift`) carry it out where the response would go on the wire. A streaming
/// response (``HandlerResult/stream(_:_:)``) ignores a fault on its head.
///
/// `indirect`: boxed, so ``HTTPResponse/connectionFault`` is one pointer (nil when there is no fault) and a
/// response without a fault stays as cheap to copy as before (8 bytes more, instead of 24).
public indirect enum ConnectionFault: Sendable, Equatable {
    /// HTTP/2: the stream is not answered; GOAWAY with `errorCode` and `debugData` whose last-stream-id is the
    /// stream before this one (id − 2, at least 0), then the connection closes once the GOAWAY is out (what was
    /// queued before goes first). HTTP/1.1: the connection closes without an answer.
    case goAway(errorCode: UInt32, debugData: [UInt8])
    /// HTTP/2: RST_STREAM with `errorCode` instead of the answer; the connection goes on.
    /// HTTP/1.1: the connection closes without an answer.
    case resetStream(errorCode: UInt32)
    /// The TCP connection closes at once, without an answer (in-flight streams are dropped).
    case close
    /// The connection stops reading (nothing more it sends is processed) and this request is not answered;
    /// other connections are served as usual. After `nanoseconds` reading resumes and the response goes out;
    /// nil: until the client gives up (or the server's own timeouts / shutdown drain end it).
    case stall(nanoseconds: UInt64?)
    /// The response goes out slowly: the head at once, then the body `bytesPerChunk` bytes every
    /// `intervalNanoseconds`; the stream ends with the last chunk (an empty body: END_STREAM after one interval).
    case trickle(bytesPerChunk: Int, intervalNanoseconds: UInt64)
    /// HTTP/2: the response goes out normally, then SETTINGS MAX_CONCURRENT_STREAMS = `to`; after
    /// `forNanoseconds` a SETTINGS frame restores the value in force before the cut (a cut during a cut extends it).
    /// HTTP/1.1: the response goes out normally (nothing to cut).
    case limitConcurrentStreams(to: UInt32, forNanoseconds: UInt64)
}

extension ConnectionFault {
    /// A short name for logs (`goAway`, `stall`, …).
    var name: String {
        switch self {
        case .goAway: "goAway"
        case .resetStream: "resetStream"
        case .close: "close"
        case .stall: "stall"
        case .trickle: "trickle"
        case .limitConcurrentStreams: "limitConcurrentStreams"
        }
    }
}

extension HTTPResponse {
    /// The response without its fault: what goes on the wire once the fault has been carried out.
    var withoutFault: HTTPResponse {
        var plain = self
        plain.connectionFault = nil
        return plain
    }
}
