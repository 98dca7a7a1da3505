// APNs Sandbox — the registry while stored devices load: what the loader may add, and what a lookup must settle.
import APNsProtocol
import Foundation
import Sandbox
import Testing

@Suite struct DeviceRegistryLoadingTests {
    private static func token(_ index: Int) -> DeviceToken {
        DeviceToken(hex: String(format: "%08x", index) + String(repeating: "e7", count: 28))!
    }

    private static func device(_ index: Int, app: String = "com.a", installedAt: Int64 = 1) -> Device {
        Device(token: token(index), environment: .development, apps: [InstalledApp(bundleID: app, installedAt: installedAt)])
    }

    /// Before loading begins and after it ends the registry alone answers (no lookups); meanwhile a token neither
    /// loaded nor settled needs one, and `adopt` settles it either way (found, or not in the store).
    @Test func aTokenNotLoadedNeedsOneLookup() {
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        #expect(!registry.isLoading && !registry.needsLookup(Self.token(1)))
        registry.beginLoading()
        registry.load([Self.device(1)])
        #expect(registry.isLoading)
        #expect(!registry.needsLookup(Self.token(1)), "loaded")
        #expect(registry.needsLookup(Self.token(2)) && registry.needsLookup(Self.token(3)))
        registry.adopt(Self.device(2), for: Self.token(2))
        registry.adopt(nil, for: Self.token(3))
        #expect(!registry.needsLookup(Self.token(2)) && !registry.needsLookup(Self.token(3)))
        #expect(registry.resolve(token: Self.token(2), environment: .development, bundleID: "com.a", now: 5) == nil)
        #expect(registry.resolve(token: Self.token(3), environment: .development, bundleID: "com.a", now: 5)
            == APNsError(.badDeviceToken))
        // A second lookup's answer (read before a change the first one saw) does not replace the first.
        registry.adopt(Self.device(2, app: "com.old"), for: Self.token(2))
        #expect(registry.device(token: Self.token(2))?.apps["com.a"] != nil)
        #expect(registry.waitUntilLoaded(seconds: 0.01) == false)
        registry.finishLoading()
        #expect(!registry.isLoading && !registry.needsLookup(Self.token(4)))
        #expect(registry.waitUntilLoaded(seconds: 0) && registry.waitUntilLoaded(seconds: 0), "every waiter passes")
        // Once loaded a lookup's answer is ignored: the registry is complete.
        registry.adopt(Self.device(4), for: Self.token(4))
        #expect(registry.device(token: Self.token(4)) == nil)
        #expect(registry.deviceCount == 2)
    }

    /// Whatever changed a token while loading (an upsert, a removal, an uninstall, an auto-registration, a
    /// forgotten registration, a lookup) keeps what it made when the loader's older copy of the token comes in;
    /// any other token gets the stored device.
    @Test func theLoaderNeverReplacesAChangeMadeMeanwhile() throws {
        let registry = DeviceRegistry(unknownTokenPolicy: .autoRegister)
        registry.beginLoading()
        registry.upsert(Self.device(1, app: "com.new"))
        registry.remove(token: Self.token(2))
        registry.adopt(Self.device(3, app: "com.new"), for: Self.token(3))
        registry.adopt(Self.device(4, installedAt: 7), for: Self.token(4))
        #expect(registry.uninstall(bundleID: "com.a", from: Self.token(4), at: 9))
        #expect(registry.resolve(token: Self.token(5), environment: .development, bundleID: "com.new", now: 3) == nil)
        #expect(registry.resolve(token: Self.token(6), environment: .development, bundleID: "com.new", now: 3) == nil)
        registry.forget(try #require(registry.device(token: Self.token(6))))
        registry.load((1...8).map { Self.device($0) })
        registry.finishLoading()
        #expect(registry.device(token: Self.token(1))?.apps["com.new"] != nil, "upserted")
        #expect(registry.device(token: Self.token(2)) == nil, "removed")
        #expect(registry.device(token: Self.token(3))?.apps["com.new"] != nil, "looked up")
        #expect(registry.resolve(token: Self.token(4), environment: .development, bundleID: "com.a", now: 10)
            == APNsError(.unregistered, timestamp: 9), "uninstalled")
        #expect(registry.device(token: Self.token(5))?.apps["com.new"] != nil, "auto-registered")
        #expect(registry.device(token: Self.token(6)) == nil, "forgotten")
        for index in [7, 8] { #expect(registry.device(token: Self.token(index)) == Self.device(index), "loaded") }
    }
}
