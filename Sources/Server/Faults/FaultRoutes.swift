// APNs Sandbox — `/api/v1/faults`: fault rules over REST.
import APNsProtocol
import Foundation
import HTTP
import Sandbox

/// List, add, read and delete fault rules (docs/faults.md). The rules live in memory: these handlers take a lock
/// for a moment and never touch the disk, so they answer on the loop.
struct FaultRoutes: Sendable {
    let service: FaultService

    /// A rule as the API answers it: the rule (``FaultRuleSpec``, normalised) and its state.
    struct RuleDTO: Encodable {
        var spec: FaultRuleSpec
        var order: Int
        var state: String
        var matched: Int
        var applied: Int
        var remaining: Int?
        var createdAt: Int64
        var source: String

        enum CodingKeys: String, CodingKey {
            case order, state, matched, applied, remaining, createdAt, source
        }

        func encode(to encoder: any Encoder) throws {
            try spec.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(order, forKey: .order)
            try container.encode(state, forKey: .state)
            try container.encode(matched, forKey: .matched)
            try container.encode(applied, forKey: .applied)
            try container.encodeIfPresent(remaining, forKey: .remaining)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(source, forKey: .source)
        }
    }

    struct Listing: Encodable {
        struct Totals: Encodable {
            var applied: Int
            var byAction: [String: Int]
        }

        var rules: [RuleDTO]
        var totals: Totals
    }

    func register(on router: inout Router) {
        router.get("/api/v1/faults") { _, _ in .response(list()) }
        router.post("/api/v1/faults") { request, _ in .response(try create(request.body)) }
        router.on("DELETE", "/api/v1/faults") { _, _ in
            .response(.json(encoding: ["removed": service.book.removeAll { _ in true }]))
        }
        router.get("/api/v1/faults/{id}") { _, parameters in .response(try read(parameters["id"] ?? "")) }
        router.on("DELETE", "/api/v1/faults/{id}") { _, parameters in
            let id = parameters["id"] ?? ""
            guard service.book.remove(id: id) else { throw Self.notFound(id) }
            return .response(HTTPResponse(status: 204))
        }
    }

    func list() -> HTTPResponse {
        let now = service.clock.nowMilliseconds
        let rules = service.book.entries.enumerated().map { Self.dto($1, order: $0, now: now) }
        let totals = service.book.totals
        return .json(encoding: Listing(rules: rules, totals: .init(applied: totals.applied, byAction: totals.byAction)))
    }

    func create(_ body: [UInt8]) throws -> HTTPResponse {
        let rule = try service.add(Self.spec(from: body))
        var response = try read(rule.id, status: 201)
        response.headers.set("location", "/api/v1/faults/\(rule.id)")
        return response
    }

    func read(_ id: String, status: Int = 200) throws -> HTTPResponse {
        let entries = service.book.entries
        guard let index = entries.firstIndex(where: { $0.rule.id == id }) else { throw Self.notFound(id) }
        return .json(status: status, encoding: Self.dto(entries[index], order: index, now: service.clock.nowMilliseconds))
    }

    static func dto(_ entry: FaultBook.Entry, order: Int, now: Int64) -> RuleDTO {
        RuleDTO(
            spec: FaultRuleSpec(entry.rule), order: order, state: entry.state(at: now), matched: entry.matched,
            applied: entry.applied, remaining: entry.remaining, createdAt: entry.rule.createdAt,
            source: entry.rule.source.rawValue)
    }

    static func notFound(_ id: String) -> APIError {
        APIError(status: 404, code: "not_found", message: "No fault rule \(id)")
    }

    /// Decodes a rule from a request body.
    /// - Throws: ``APIError`` 400 `invalid_json` / `invalid_field` (the field's path and what is wrong).
    static func spec(from body: [UInt8]) throws -> FaultRuleSpec {
        guard !body.isEmpty else { throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required") }
        do {
            _ = try JSON.parse(body)
        } catch {
            throw APIError(status: 400, code: "invalid_json", message: "The body is not valid JSON: \(error)")
        }
        do {
            return try JSONDecoder().decode(FaultRuleSpec.self, from: Data(body))
        } catch let error as DecodingError {
            let message = SandboxConfiguration.describe(error)
            let code = message.contains("unknown key") ? "unknown_field" : "invalid_field"
            throw APIError(status: 400, code: code, message: message)
        }
    }
}
