// APNs Sandbox — devices and apps in the SQLite store.
import Dispatch
import Sandbox
@testable import Store
import Synchronization
import Testing
import Support

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

    /// The bound the start sizes the registry with is never below the number of devices, deletes included.
    @Test func deviceCountBoundCoversEveryDevice() throws {
        #expect(try store.deviceCountBound() == 0)
        for index in 0..<5 { try store.saveDevice(DeviceRecord(token: "t\(index)", environment: .development)) }
        #expect(try store.deviceCountBound() >= 5)
        #expect(try store.deleteDevice(token: "t4"))
        #expect(try store.deleteDevice(token: "t0"))
        var listed = 0
        try store.forEachDevice { _ in listed += 1 }
        #expect(listed == 3)
        #expect(try store.deviceCountBound() >= listed)
    }

    /// A registered device is readable at once, committed with (or before) the next save, never replaces a
    /// stored device, and is durable: a second store on the file finds it once that save completed.
    @Test func registeredDeviceCommitsNoLaterThanTheNextSave() throws {
        let device = DeviceRecord(token: "new1", environment: .development, isAutoRegistered: true)
        let registered = DispatchSemaphore(value: 0)
        let added = Locked<Bool?>(nil)
        store.registerDevice(device) { result in
            added.withLock { $0 = (try? result.get()) }
            registered.signal()
        }
        #expect(try store.device(token: "new1") == device)
        let saved = DispatchSemaphore(value: 0)
        store.save([sampleRecord(apnsID: "after-registration", token: "new1")]) { _ in saved.signal() }
        saved.wait()
        let other = try SQLiteStore(path: directory.file("devices.sqlite"))
        #expect(try other.device(token: "new1") == device)
        other.close()
        registered.wait()
        #expect(added.withLock { $0 } == true)

        let existing = DeviceRecord(token: "old1", environment: .production, locale: "de_DE")
        try store.saveDevice(existing)
        store.registerDevice(DeviceRecord(token: "old1", environment: .development)) { result in
            added.withLock { $0 = (try? result.get()) }
            registered.signal()
        }
        registered.wait()
        #expect(added.withLock { $0 } == false)
        #expect(try store.device(token: "old1") == existing)
    }

    /// A read that began before a write does not cache what it found over the write.
    @Test func staleReadsDoNotHideWrites() {
        let cache = RecordCache<String>()
        let ticket = cache.readTicket()
        cache.set("written", for: "k")
        cache.fill(nil, for: "k", readSince: ticket)
        #expect(cache.lookup("k") == .some("written"))
        let later = cache.readTicket()
        cache.fill("read", for: "k", readSince: later)
        #expect(cache.lookup("k") == .some("read"))
        cache.forget("k")
        #expect(cache.lookup("k") == nil)
    }

    /// A cache that fills up and clears does not let a read from before the clear cache "absent" over a
    /// device registered meanwhile; the registration's commit caches it again.
    @Test func clearingTheCacheKeepsRegisteredDevicesVisible() {
        let cache = RecordCache<String>(capacity: 3)
        cache.set("a", for: "a")
        cache.set("b", for: "b")
        let ticket = cache.readTicket()      // a read of "x" begins (before "x" is registered)
        cache.setIfAbsent("x", for: "x")     // registered: its insert is queued
        cache.set("y", for: "y")             // the fourth key clears the cache
        cache.fill(nil, for: "x", readSince: ticket)
        #expect(cache.lookup("x") == nil, "a read from before the clear cached over the registration")
        cache.set("x", for: "x")             // the insert commits
        #expect(cache.lookup("x") == .some("x"))
        cache.setIfAbsent("other", for: "x")
        #expect(cache.lookup("x") == .some("x"))
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
