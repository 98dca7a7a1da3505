// APNs Sandbox — devices and apps in the SQLite store.
import Sandbox
import Store
import Testing

@Suite struct SQLiteStoreDeviceTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.file("devices.sqlite"))
    }

    /// Devices save, replace, list in creation order with paging, and delete.
    @Test func devicesCRUD() throws {
        let first = DeviceRecord(
            token: "t1", environment: .development, locale: "fr_FR", isOnline: false,
            apps: [InstalledAppRecord(bundleID: "com.a", installedAt: 1, uninstalledAt: 2, badge: 3)],
            keys: ["com.a": "a2V5", "com.b": "b3"], createdAt: 10, isAutoRegistered: true)
        let second = DeviceRecord(token: "t0", environment: .production)
        try store.saveDevice(first)
        try store.saveDevice(second)
        #expect(try store.device(token: "t1") == first)
        #expect(try store.device(token: "missing") == nil)
        #expect(try store.devices(limit: 10, offset: 0) == [first, second])

        var changed = first
        changed.isOnline = true
        changed.apps.append(InstalledAppRecord(bundleID: "com.c", installedAt: 5))
        try store.saveDevice(changed)
        #expect(try store.device(token: "t1") == changed)
        #expect(try store.devices(limit: 1, offset: 0) == [changed])
        #expect(try store.devices(limit: 10, offset: 1) == [second])
        #expect(try store.devices(limit: 0, offset: 0).isEmpty)

        #expect(try store.deleteDevice(token: "t1"))
        #expect(try !store.deleteDevice(token: "t1"))
        #expect(try store.devices(limit: 10, offset: 0) == [second])
    }

    /// Apps save, replace, list by bundle ID, and delete.
    @Test func appsCRUD() throws {
        let app = AppRecord(
            bundleID: "com.z", teamID: "TEAM",
            strings: ["en": ["GREETING": "Hello %@"], "fr": ["GREETING": "Bonjour \"%@\""]],
            serviceExtensionJSON: #"{"mode":"modify"}"#)
        try store.saveApp(app)
        try store.saveApp(AppRecord(bundleID: "com.a", teamID: "OTHER"))
        #expect(try store.app(bundleID: "com.z") == app)
        #expect(try store.app(bundleID: "none") == nil)
        var changed = app
        changed.serviceExtensionJSON = nil
        try store.saveApp(changed)
        #expect(try store.apps().map(\.bundleID) == ["com.a", "com.z"])
        #expect(try store.app(bundleID: "com.z") == changed)
        #expect(try store.deleteApp(bundleID: "com.a"))
        #expect(try store.apps() == [changed])
    }
}
