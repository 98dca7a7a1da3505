// APNs Sandbox — helpers shared by the HTTP/1.1 parser tests.

@testable import HTTP

extension HTTP1Parser {
    /// Appends `text` and collects events until `.needMoreData` (not included) or an error (included).
    mutating func feed(_ text: String) -> [HTTP1ParseEvent] {
        append(Array(text.utf8))
        return drain()
    }

    /// Calls `next()` until `.needMoreData` (not included) or an error (included).
    mutating func drain() -> [HTTP1ParseEvent] {
        var events: [HTTP1ParseEvent] = []
        while true {
            let event = next()
            switch event {
            case .needMoreData: return events
            case .error: events.append(event); return events
            default: events.append(event)
            }
        }
    }
}

/// Every event a fresh parser produces for `text` fed in one piece.
func parseEvents(_ text: String, limits: HTTP1Limits = HTTP1Limits()) -> [HTTP1ParseEvent] {
    var parser = HTTP1Parser(limits: limits)
    return parser.feed(text)
}

/// The error a fresh parser reports for `text`, if any.
func parseError(_ text: String, limits: HTTP1Limits = HTTP1Limits()) -> HTTP1ParseError? {
    for case .error(let error) in parseEvents(text, limits: limits) { return error }
    return nil
}

/// The status of the error a fresh parser reports for `text`, if any.
func rejectionStatus(_ text: String, limits: HTTP1Limits = HTTP1Limits()) -> Int? {
    parseError(text, limits: limits)?.status
}

extension HTTP1ParseEvent {
    /// The head and body of a `.request` event.
    var request: (head: HTTP1RequestHead, body: [UInt8])? {
        if case .request(let head, let body) = self { return (head, body) }
        return nil
    }
}
