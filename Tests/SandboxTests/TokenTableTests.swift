// APNs Sandbox — the compact token table against a dictionary, and the registry's packed devices.
import APNsProtocol
import Sandbox
import Testing

@Suite struct TokenTableTests {
    /// Keys keep the order they were first added in; a replaced value keeps its place, a removed and re-added key
    /// goes to the end; a key that is not lowercase hex (upper case, odd length, any text) is a key of its own.
    @Test func orderAndKinds() {
        var table = TokenTable<Int>()
        let a = String(repeating: "ab", count: 32)
        let b = String(repeating: "cd", count: 16)
        table[a] = 1
        table[b] = 2
        table["AB"] = 3
        table["abc"] = 4
        table["ab"] = 5
        table[a] = 10
        table["4142"] = 6  // the bytes of "AB" as hex: another key
        #expect(table.count == 6)
        #expect(table.page(limit: 10, offset: 0).map(\.key) == [a, b, "AB", "abc", "ab", "4142"])
        #expect(table[a] == 10 && table["AB"] == 3 && table["4142"] == 6 && table["ab"] == 5 && table["Ab"] == nil
            && table[""] == nil)
        table["4142"] = nil
        #expect(table.removeValue(forKey: b) == 2)
        #expect(table.removeValue(forKey: b) == nil)
        table[b] = 20
        #expect(table.page(limit: 2, offset: 3).map(\.value) == [5, 20])
        table.removeAll { key, _ in key.count < 4 }
        var seen: [String: Int] = [:]
        table.forEach { seen[$0] = $1 }
        #expect(seen == [a: 10, b: 20])
        table.removeAll()
        #expect(table.isEmpty && table[a] == nil)
    }

    /// 60,000 random adds, replaces and removes (through growth, tombstones and compactions) leave the table
    /// holding what a dictionary holds, in the order of first addition.
    @Test func agreesWithADictionary() {
        var generator = SeededGenerator(seed: 17)
        var table = TokenTable<UInt64>()
        table.reserveCapacity(100)
        var reference: [String: UInt64] = [:]
        var order: [String] = []
        let keys = (0..<5_000).map { index in
            index % 10 == 0 ? "key-\(index)" : String((0..<4).map { _ in generator.next() }.map { hex64($0) }.joined().prefix(32 + 2 * (index % 17)))
        }
        for step in 0..<60_000 {
            let key = keys[Int(generator.next() % UInt64(keys.count))]
            if generator.next() % 3 == 0 {
                #expect(table.removeValue(forKey: key) == reference.removeValue(forKey: key))
                order.removeAll { $0 == key }
            } else {
                let value = UInt64(step)
                if reference.updateValue(value, forKey: key) == nil { order.append(key) }
                table[key] = value
            }
        }
        #expect(table.count == reference.count)
        for key in keys { #expect(table[key] == reference[key]) }
        #expect(table.page(limit: .max, offset: 0).map(\.key) == order)
        // Removing nearly everything compacts the table; what is left is still found.
        let survivors = Array(order.prefix(10))
        for key in order.dropFirst(10) { table[key] = nil }
        #expect(table.count == survivors.count)
        #expect(table.page(limit: .max, offset: 0).map(\.key) == survivors)
        for key in survivors { #expect(table[key] == reference[key]) }
        // Room made ahead of a load keeps what is there.
        table.reserveCapacity(50_000)
        #expect(table.page(limit: .max, offset: 0).map(\.key) == survivors)
        for index in 0..<20_000 { table["added-\(index)"] = UInt64(index) }
        #expect(table.count == 20_010 && table["added-19999"] == 19_999 && table[survivors[0]] == reference[survivors[0]])
    }

    private func hex64(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

@Suite struct PackedDeviceTests {
    let token = DeviceToken(hex: String(repeating: "ab", count: 32))!
    let long = DeviceToken(hex: String(repeating: "0f", count: 100))!

    /// A device moves between the packed form (one app) and the whole one (none, several) without losing a field,
    /// and the admission rules hold for both.
    @Test func devicesOfEveryShapeKeepTheirFields() {
        let registry = DeviceRegistry(unknownTokenPolicy: .strict)
        // Packed: one app, installed.
        let packed = Device(token: token, environment: .production, locale: "fr_FR",
                            apps: [InstalledApp(bundleID: "com.a", installedAt: -3)], isAutoRegistered: true)
        registry.upsert(packed)
        #expect(registry.device(token: token) == packed)
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.a", now: 1) == nil)
        #expect(registry.resolve(token: token, environment: .development, bundleID: "com.a", now: 1)
            == APNsError(.badDeviceToken))
        // Uninstalled: kept whole; installed again: packed again.
        #expect(registry.uninstall(bundleID: "com.a", from: token, at: 2))
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.a", now: 2)
            == APNsError(.unregistered, timestamp: 2))
        registry.upsert(packed)
        #expect(registry.device(token: token) == packed && registry.deviceCount == 1)
        let one = Device(token: token, environment: .production, locale: "fr_FR",
                         apps: [InstalledApp(bundleID: "com.a", installedAt: 5, uninstalledAt: 0)], isAutoRegistered: true)
        registry.upsert(one)
        #expect(registry.device(token: token) == one)
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.a", now: 1)
            == APNsError(.unregistered, timestamp: 0))
        let two = Device(token: token, environment: .production, locale: "de_DE",
                         apps: [InstalledApp(bundleID: "com.a", installedAt: 5), InstalledApp(bundleID: "com.b", installedAt: 6)])
        registry.upsert(two)
        #expect(registry.device(token: token) == two && registry.deviceCount == 1)
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.b", now: 1) == nil)
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.c", now: 1)
            == APNsError(.deviceTokenNotForTopic))
        #expect(registry.uninstall(bundleID: "com.b", from: token, at: 7))
        #expect(registry.resolve(token: token, environment: .production, bundleID: "com.b", now: 7)
            == APNsError(.unregistered, timestamp: 7))
        let none = Device(token: long, environment: .development)
        registry.upsert(none)
        #expect(registry.device(token: long) == none && registry.deviceCount == 2)
        #expect(registry.resolve(token: long, environment: .development, bundleID: "com.a", now: 1)
            == APNsError(.deviceTokenNotForTopic))
        registry.upsert(one)
        #expect(registry.device(token: token) == one && registry.deviceCount == 2)
        registry.remove(token: token)
        registry.remove(token: long)
        #expect(registry.deviceCount == 0 && registry.device(token: token) == nil)
    }
}
