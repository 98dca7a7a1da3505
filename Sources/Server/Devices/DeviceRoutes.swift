// APNs Sandbox — `/api/v1/devices` and `/api/v1/apps`: the simulated world, over REST.
import APNsProtocol
import ExtensionRuntime
import Foundation
import HTTP
import Sandbox
import Support
import Synchronization

/// Devices: list, create (token generated or given), read, change (online/offline, locale, install
/// and uninstall apps, keychain keys, token rotation), delete, and the Notification Center.
struct DeviceRoutes: Sendable {
    let service: DeviceService

    func register(on router: inout Router) {
        router.get("/api/v1/devices") { request, _ in
            .blocking { try list(QueryParameters(request.query)) }
        }
        router.post("/api/v1/devices") { request, _ in
            .blocking { try create(request.body) }
        }
        router.get("/api/v1/devices/{token}") { _, parameters in
            .blocking { try read(parameters["token"] ?? "") }
        }
        router.on("PATCH", "/api/v1/devices/{token}") { request, parameters in
            .blocking { try update(parameters["token"] ?? "", request.body) }
        }
        router.on("DELETE", "/api/v1/devices/{token}") { _, parameters in
            .blocking { try delete(parameters["token"] ?? "") }
        }
        router.get("/api/v1/devices/{token}/notification-center") { request, parameters in
            .blocking { try notificationCenter(parameters["token"] ?? "", QueryParameters(request.query)) }
        }
    }

    func list(_ query: QueryParameters) throws -> HTTPResponse {
        let limit = try query.integer("limit", default: 100, in: 1...1000)
        let offset = try query.integer("offset", default: 0, in: 0...Int(Int32.max))
        let page = try service.devices.devices(limit: limit, offset: offset)
        return .json(encoding: ["devices": page.map(DeviceDTO.init)])
    }

    func create(_ body: [UInt8]) throws -> HTTPResponse {
        let request = try APIBody.decode(CreateDeviceRequest.self, from: body, allowEmpty: true) ?? CreateDeviceRequest()
        let token: String
        if let given = request.token {
            guard let parsed = DeviceToken(hex: given) else {
                throw APIError(status: 422, code: "invalid_token", message: "token must be 32–400 hex digits (an even number)")
            }
            token = parsed.hex
        } else {
            token = Self.randomToken()
        }
        let environment = try APIBody.environment(request.environment ?? "development")
        var seen = Set<String>()
        let apps = try APIBody.bundleIDs(request.apps ?? []).filter { seen.insert($0).inserted }
        let keys = try APIBody.keys(request.keys ?? [:])
        let now = service.clock.nowMilliseconds
        let record = DeviceRecord(
            token: token, environment: environment, locale: try APIBody.locale(request.locale ?? "en_US"),
            isOnline: request.online ?? true, apps: apps.map { InstalledAppRecord(bundleID: $0, installedAt: now) },
            keys: keys, createdAt: now)
        guard try service.create(record) else {
            throw APIError(status: 409, code: "exists", message: "Device \(token) exists")
        }
        var response = HTTPResponse.json(status: 201, encoding: DeviceDTO(record))
        response.headers.set("location", "/api/v1/devices/\(token)")
        return response
    }

    func read(_ token: String) throws -> HTTPResponse {
        guard let record = try service.devices.device(token: Self.normalized(token)) else {
            throw APIError(status: 404, code: "not_found", message: "No device \(token)")
        }
        return .json(encoding: DeviceDTO(record))
    }

    func update(_ token: String, _ body: [UInt8]) throws -> HTTPResponse {
        guard let request = try APIBody.decode(UpdateDeviceRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        let install = try APIBody.bundleIDs(request.installApps ?? [])
        let uninstall = try APIBody.bundleIDs(request.uninstallApps ?? [])
        let keys = try APIBody.keys(request.keys ?? [:])
        let locale = try request.locale.map(APIBody.locale)
        let now = service.clock.nowMilliseconds
        let current = Self.normalized(token)
        var updated = try service.update(token: current) { record in
            if let online = request.online { record.isOnline = online }
            if let locale { record.locale = locale }
            for bundleID in install {
                if let index = record.apps.firstIndex(where: { $0.bundleID == bundleID }) {
                    record.apps[index].uninstalledAt = nil
                    record.apps[index].installedAt = now
                } else {
                    record.apps.append(InstalledAppRecord(bundleID: bundleID, installedAt: now))
                }
            }
            for bundleID in uninstall {
                guard let index = record.apps.firstIndex(where: { $0.bundleID == bundleID }) else {
                    throw APIError(status: 422, code: "not_installed", message: "\(bundleID) is not installed")
                }
                record.apps[index].uninstalledAt = now
            }
            for (bundleID, key) in keys { record.keys[bundleID] = key }
        }
        if request.rotateToken == true {
            // The old token stops working (its apps read as uninstalled: 410 Unregistered); the device
            // continues under a new token with the same apps, keys and settings.
            let fresh = Self.randomToken()
            var moved = updated
            moved.token = fresh
            moved.apps = updated.apps.filter { $0.uninstalledAt == nil }
            try service.save(moved)
            _ = try service.update(token: current) { record in
                for index in record.apps.indices where record.apps[index].uninstalledAt == nil {
                    record.apps[index].uninstalledAt = now
                }
            }
            updated = moved
        }
        return .json(encoding: DeviceDTO(updated))
    }

    func delete(_ token: String) throws -> HTTPResponse {
        guard try service.delete(token: Self.normalized(token)) else {
            throw APIError(status: 404, code: "not_found", message: "No device \(token)")
        }
        return HTTPResponse(status: 204)
    }

    func notificationCenter(_ token: String, _ query: QueryParameters) throws -> HTTPResponse {
        let limit = try query["limit"].map { _ in try query.integer("limit", default: 0, in: 1...10_000) }
        let normalized = Self.normalized(token)
        guard try service.devices.device(token: normalized) != nil else {
            throw APIError(status: 404, code: "not_found", message: "No device \(token)")
        }
        let center = try service.engine.notificationCenter(token: normalized, limit: limit)
        return .json(encoding: NotificationCenterDTO(center, deviceToken: normalized))
    }

    static func normalized(_ token: String) -> String {
        DeviceToken(hex: token)?.hex ?? token
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

/// Apps: list, create, read, change (team, localized strings, service extension).
struct AppRoutes: Sendable {
    let devices: any DeviceRepository
    let registry: DeviceRegistry
    /// The programs an `exec` extension set through the API may name.
    let execPolicy: ExecPolicy
    /// Serialises the read-modify-write of apps (two PATCHes at once must not lose one of their changes).
    /// Held across the store write, on a worker thread (API handlers never run on an event loop).
    private let writes = AppWriteLock()

    init(devices: any DeviceRepository, registry: DeviceRegistry, execPolicy: ExecPolicy) {
        self.devices = devices
        self.registry = registry
        self.execPolicy = execPolicy
    }

    func register(on router: inout Router) {
        router.get("/api/v1/apps") { _, _ in
            .blocking {
                let apps = try devices.apps()
                return .json(encoding: ["apps": apps.map(AppDTO.init)])
            }
        }
        router.post("/api/v1/apps") { request, _ in
            .blocking { try writes.serialized { try create(request.body) } }
        }
        router.get("/api/v1/apps/{bundleId}") { _, parameters in
            .blocking {
                let bundleID = parameters["bundleId"] ?? ""
                guard let app = try devices.app(bundleID: bundleID) else {
                    throw APIError(status: 404, code: "not_found", message: "No app \(bundleID)")
                }
                return .json(encoding: AppDTO(app))
            }
        }
        router.on("PATCH", "/api/v1/apps/{bundleId}") { request, parameters in
            .blocking { try writes.serialized { try update(parameters["bundleId"] ?? "", request.body) } }
        }
    }

    func create(_ body: [UInt8]) throws -> HTTPResponse {
        guard let request = try APIBody.decode(AppRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        guard let bundleID = try APIBody.bundleIDs([request.bundleId ?? ""]).first else {
            throw APIError(status: 422, code: "invalid_bundle_id", message: "bundleId is required")
        }
        guard let teamID = request.teamId, !teamID.isEmpty, teamID.count <= 64 else {
            throw APIError(status: 422, code: "invalid_team_id", message: "teamId is required")
        }
        if try devices.app(bundleID: bundleID) != nil {
            throw APIError(status: 409, code: "exists", message: "App \(bundleID) exists")
        }
        let record = AppRecord(
            bundleID: bundleID, teamID: teamID, strings: request.strings ?? [:],
            serviceExtensionJSON: try request.serviceExtension.flatMap { $0 == .null ? nil : try APIBody.serviceExtensionText($0, execPolicy: execPolicy) })
        try devices.saveApp(record)
        registry.upsert(App(bundleID: bundleID, teamID: teamID))
        return .json(status: 201, encoding: AppDTO(record))
    }

    func update(_ bundleID: String, _ body: [UInt8]) throws -> HTTPResponse {
        guard let request = try APIBody.decode(AppRequest.self, from: body, allowEmpty: false) else {
            throw APIError(status: 400, code: "invalid_json", message: "A JSON object is required")
        }
        guard var record = try devices.app(bundleID: bundleID) else {
            throw APIError(status: 404, code: "not_found", message: "No app \(bundleID)")
        }
        if let teamID = request.teamId {
            guard !teamID.isEmpty, teamID.count <= 64 else {
                throw APIError(status: 422, code: "invalid_team_id", message: "teamId must be 1–64 characters")
            }
            record.teamID = teamID
        }
        if let strings = request.strings { record.strings = strings }
        if let serviceExtension = request.serviceExtension {
            record.serviceExtensionJSON = serviceExtension == .null ? nil : try APIBody.serviceExtensionText(serviceExtension, execPolicy: execPolicy)
        }
        try devices.saveApp(record)
        registry.upsert(App(bundleID: record.bundleID, teamID: record.teamID))
        return .json(encoding: AppDTO(record))
    }
}

/// One app change at a time (the routes are values; the lock is shared by reference).
private final class AppWriteLock: Sendable {
    private let lock = Locked(())

    func serialized<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock { _ in try body() }
    }
}
