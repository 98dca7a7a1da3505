// APNs Sandbox — a payload's root members with their text, for the fields `Payload` does not carry.
import APNsProtocol

/// A payload's root object: its members, each with the exact text it had in the body.
///
/// The delivery layer reads alert loc keys, `target-content-id`, `relevance-score` and the custom keys
/// beside `aps` from it. Payloads reaching delivery were validated as strict JSON by the provider
/// endpoint; parsing is ``JSON``'s (strict as well) and yields nil on anything else rather than guessing.
struct PayloadDocument: Sendable {
    var members: [JSON.RootMember]

    /// The `aps` object (the last one when repeated).
    var aps: JSON? { members.last(where: { $0.key == "aps" })?.value }

    /// The custom keys (everything beside `aps`) as a JSON object, values exactly as received;
    /// a repeated key keeps its last value, at the position of that last occurrence. `{}` when there are none.
    var userInfoJSON: String {
        var seen = Set<String>()
        var kept: [String] = []
        for member in members.reversed() where member.key != "aps" && seen.insert(member.key).inserted {
            kept.append(member.text)
        }
        return "{" + kept.reversed().joined(separator: ",") + "}"
    }

    /// Parses a payload body; nil when it is not a strict JSON object.
    init?(parsing text: String) {
        guard let members = try? JSON.rootMembers(of: Array(text.utf8)) else { return nil }
        self.members = members
    }
}
