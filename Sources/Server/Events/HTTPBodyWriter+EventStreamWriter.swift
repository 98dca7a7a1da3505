// APNs Sandbox — an HTTP streaming body is what the event hub writes SSE frames to.
import Events
import HTTP

/// `HTTPBodyWriter` already has every member ``EventStreamWriter`` asks for, with the same meaning.
extension HTTPBodyWriter: EventStreamWriter {}
