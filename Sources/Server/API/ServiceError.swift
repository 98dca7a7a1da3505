// APNs Sandbox — what an application service refuses, in the domain's words (no HTTP status: see ServiceError+HTTP).

/// A request an application service (devices, faults, clock, reset and snapshots) will not carry out.
///
/// Services throw these; the one mapper, ``ServiceError/response``, turns each into the REST API's answer
/// (status, `code` and message), so that a service knows nothing of HTTP and another face (the CLI, a second
/// protocol) can word them its own way.
enum ServiceError: Error, Equatable {
    /// No such thing: `kind` (`device`, `app`, …) and its id.
    case notFound(kind: String, id: String)
    /// A thing with this id exists already.
    case exists(kind: String, id: String)
    /// There may be at most `limit` of `kind`.
    case limitReached(kind: String, limit: Int)
    /// What the request describes is not a valid `kind` (the message names the field and what is wrong).
    case invalid(kind: String, message: String)
    /// Not now: `what` (e.g. the stored devices) is still being loaded; trying again later helps.
    case stillLoading(what: String)
    /// The change needs the virtual clock (`clock.virtual` in the configuration).
    case clockNotVirtual
}
