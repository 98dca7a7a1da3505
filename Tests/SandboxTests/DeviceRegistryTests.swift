// APNs Sandbox — deciding whether a push may reach a device.
import APNsProtocol
import Sandbox
import Synchronization
import Testing
import Support

@Suite struct DeviceRegistryTests {
    let token = DeviceToken(hex: String(repeating: "ab", count: 32))!
    let other = DeviceToken(hex: String(repeating: "cd", count: 32))!

    /// A device's apps by bundle ID: a repeated bundle ID keeps its last entry, a set replaces or removes one,
    /// and two lists of the same apps are equal in any order.
    @Test func installedAppsByBundleID() {
        var apps = InstalledApps([InstalledApp(bundleID: "a", installedAt: 1), InstalledApp(bundleID: "b", installedAt: 2),
                                  InstalledApp(bundleID: "a", installedAt: 3)])
        #expect(apps.count == 2 && apps["a"]?.installedAt == 3 && apps["c"] == nil)
        apps["b"]?.uninstalledAt = 9
        #expect(apps["b"] == InstalledApp(bundleID: "b", installedAt: 2, uninstalledAt: 9))
        apps["c"] = InstalledApp(bundleID: "c", installedAt: 4)
        apps["a"] = nil
        apps["missing"] = nil
        #expect(Set(apps.values.map(\.bundleID)) == ["b", "c"])
        #expect(apps == InstalledApps([InstalledApp(bundleID: "c", installedAt: 4),
                                       InstalledApp(bundleID: "b", installedAt: 2, uninstalledAt: 9)]))
        #expect(apps != InstalledApps([InstalledApp(bundleID: "c", installedAt: 4)]))
    }

    /// Auto-register: an unknown token becomes a device of the request's environment with the app.
    @Test func autoRegistersUnknownTokens() throws {
        let registry = DeviceRegistry(unknownTokenPolicy: .autoRegister)
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 1000) == nil)
        let device = try #require(registry.device(token: token))
        #expect(device.isAutoRegistered)
        #expect(device.environment == .development)
        #expect(device.apps["com.a"]?.installedAt == 1000)
        #expect(registry.deviceCount == 1)
        // Tokens are per app: the same token for another app is not that app's.
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.b", now: 1001)
            == APNsError(.deviceTokenNotForTopic))
    }

    /// The handler runs for a new device before another push can see it; `forget` drops only that device
    /// (its write failed), so the next push registers the token again.
    @Test func forgottenAutoRegisteredDeviceIsRegisteredAgain() throws {
        let registry = DeviceRegistry(unknownTokenPolicy: .autoRegister)
        let created = Locked<[Device]>([])
        registry.onAutoRegister { device in created.withLock { $0.append(device) } }
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 1) == nil)
        let first = try #require(created.withLock { $0.first })
        #expect(registry.device(token: token) == first)
        var changed = first
        changed.locale = "fr_FR"
        registry.forget(changed)  // not the device the registry holds: kept
        #expect(registry.device(token: token) == first)
        registry.forget(first)
        #expect(registry.device(token: token) == nil)
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 2) == nil)
        #expect(created.withLock { $0.count } == 2)
    }

    /// Strict: unknown tokens get BadDeviceToken.
    @Test func strictRejectsUnknownTokens() {
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 0)
            == APNsError(.badDeviceToken))
        #expect(registry.deviceCount == 0)
    }

    /// A token of the other environment is BadDeviceToken, as APNs answers a sandbox token sent to production.
    @Test func rejectsOtherEnvironment() {
        let registry = DeviceRegistry(unknownTokenPolicy: .autoRegister)
        registry.upsert(Device(token: token, environment: .development, apps: [InstalledApp(bundleID: "com.a", installedAt: 0)]))
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.a", now: 0)
            == APNsError(.badDeviceToken))
    }

    /// After an uninstall, pushes get 410 Unregistered carrying the uninstall time.
    @Test func uninstalledAppIsUnregistered() {
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        registry.upsert(Device(token: token, environment: .production, apps: [InstalledApp(bundleID: "com.a", installedAt: 0)]))
        #expect(registry.uninstall(bundleID: "com.a", from: token, at: 1_454_096_879_000))
        let result = registry.resolve(token: token, environment: .production, bundleID: "com.a", now: 1_454_096_880_000)
        #expect(result == APNsError(.unregistered, timestamp: 1_454_096_879_000))
        #expect(!registry.uninstall(bundleID: "com.a", from: other, at: 0))
    }

    /// Replacing devices and apps swaps exactly the selected ones for the given ones.
    @Test func replacesSelectedDevicesAndApps() throws {
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        registry.upsert(Device(token: token, environment: .development, isAutoRegistered: true))
        registry.upsert(Device(token: other, environment: .production))
        registry.upsert(App(bundleID: "com.a", teamID: "T1"))
        registry.upsert(App(bundleID: "com.b", teamID: "T2"))
        let seed = Device(token: other, environment: .development, apps: [InstalledApp(bundleID: "com.a", installedAt: 5)])
        registry.replaceDevices(where: { _ in true }, with: [seed])
        #expect(registry.deviceCount == 1)
        #expect(registry.device(token: token) == nil)
        #expect(registry.device(token: other) == seed)
        registry.replaceApps(where: { $0.teamID == "T1" }, with: [App(bundleID: "com.c", teamID: "T1")])
        #expect(registry.apps.map(\.bundleID) == ["com.b", "com.c"])
    }
}

@Suite struct DeviceRegistryAutoRegisterTests {
    /// Every auto-registration calls the handler once, and 100,000 of them neither slow down nor grow
    /// the call stack (a closure stored directly in a Mutex used to gain thunks on every access).
    @Test func handlerRunsOncePerNewDevice() throws {
        let registry = DeviceRegistry(unknownTokenPolicy: .autoRegister)
        let calls = Locked(0)
        registry.onAutoRegister { _ in calls.withLock { $0 += 1 } }
        for index in 0..<100_000 {
            let hex = String(format: "%064x", index)
            let token = try #require(DeviceToken(hex: hex))
            _ = registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 0)
        }
        // Known devices do not register again.
        _ = registry.resolve(token: try #require(DeviceToken(hex: String(format: "%064x", 7))), environment: .development,
                             bundleID: "com.a", now: 0)
        #expect(calls.withLock { $0 } == 100_000)
    }
}
