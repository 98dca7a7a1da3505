// APNs Sandbox — values by device token, compact enough for a million devices.
import Support

/// Values by token string, in the order their tokens were first added, with O(1) lookup.
///
/// Built for a million devices: a token is kept as its bytes (a 64-digit hex token as 32 bytes) back to back in
/// one arena, the entries in one array, the index an open-addressed table of 32-bit positions (linear probing,
/// at most 3/4 full; a removed entry is a tombstone until the next rebuild, which also compacts). Nothing is
/// allocated per token: with a packed `Value` of 16 bytes an entry costs about 60–70 bytes in all (8 of its place,
/// 16 of value, 32 of token, 5–11 of index at a load of 3/8 to 3/4; more while the arrays have room to grow), where
/// a `[String: Device]` of 64-character tokens cost about 300 (the token's own string storage, an apps array, a
/// dictionary slot at a load of 0.4 to 0.75). Keys are strings: lowercase hex of an even length is kept as its
/// bytes; any other string (a key the API was given but no device has) is kept as its UTF-8, told apart by a flag.
/// Not thread-safe: its owner locks.
public struct TokenTable<Value> {
    @usableFromInline
    struct Entry {
        /// The key's offset in `arena` (bits 24…63), its length in bytes (bits 2…23), hex-packed (bit 1),
        /// live (bit 0).
        @usableFromInline var place: UInt64
        @usableFromInline var value: Value

        @inlinable init(place: UInt64, value: Value) {
            self.place = place
            self.value = value
        }

        @inlinable var offset: Int { Int(place >> 24) }
        @inlinable var length: Int { Int((place >> 2) & 0x3F_FFFF) }
        @inlinable var isHex: Bool { place & 2 != 0 }
        @inlinable var isLive: Bool { place & 1 != 0 }
    }

    @usableFromInline var arena: [UInt8] = []
    @usableFromInline var entries: [Entry] = []
    /// Entry position + 1 per bucket, 0 for an empty bucket; a power of two in size (or empty). A removed entry
    /// stays in the index (a tombstone) until the next rebuild.
    @usableFromInline var index: [UInt32] = []
    @usableFromInline var liveCount = 0

    /// The live entries.
    @inlinable public var count: Int { liveCount }

    @inlinable public init() {}

    /// The longest key in bytes (22 bits of an entry's place; a token is at most 200 bytes). A longer key is found
    /// nowhere, and adding one traps: callers add validated tokens only.
    @inlinable
    public static var maximumKeyLength: Int { 0x3F_FFFF }

    @inlinable
    public var isEmpty: Bool { count == 0 }

    @inlinable
    public subscript(key: String) -> Value? {
        get { Self.withKey(key) { bytes, isHex in find(bytes, isHex: isHex).map { entries[$0].value } } }
        set {
            Self.withKey(key) { bytes, isHex in
                switch (find(bytes, isHex: isHex), newValue) {
                case (let position?, let value?): entries[position].value = value
                case (let position?, nil): remove(at: position)
                case (nil, let value?): append(bytes, isHex: isHex, value: value)
                case (nil, nil): break
                }
            }
        }
    }

    /// Removes the value of `key`, returning it.
    @discardableResult
    @inlinable
    public mutating func removeValue(forKey key: String) -> Value? {
        Self.withKey(key) { bytes, isHex in
            guard let position = find(bytes, isHex: isHex) else { return nil }
            let value = entries[position].value
            remove(at: position)
            return value
        }
    }

    /// Calls `body` with each key and value, in the order the keys were first added.
    @inlinable
    public func forEach(_ body: (String, Value) throws -> Void) rethrows {
        for entry in entries where entry.isLive { try body(key(of: entry), entry.value) }
    }

    /// The keys and values in order, skipping the first `offset` live ones, at most `limit`.
    @inlinable
    public func page(limit: Int, offset: Int) -> [(key: String, value: Value)] {
        guard limit > 0 else { return [] }
        var skipped = 0
        var page: [(key: String, value: Value)] = []
        for entry in entries where entry.isLive {
            if skipped < max(offset, 0) {
                skipped += 1
                continue
            }
            page.append((key(of: entry), entry.value))
            if page.count == limit { break }
        }
        return page
    }

    /// Removes every entry `selected` picks.
    @inlinable
    public mutating func removeAll(where selected: (String, Value) throws -> Bool) rethrows {
        var removedAny = false
        for position in entries.indices where entries[position].isLive {
            if try selected(key(of: entries[position]), entries[position].value) {
                entries[position].place &= ~1
                liveCount -= 1
                removedAny = true
            }
        }
        if removedAny { rebuild(capacity: count) }
    }

    @inlinable
    public mutating func removeAll() {
        arena = []
        entries = []
        index = []
        liveCount = 0
    }

    /// Makes room for `capacity` entries of 32-byte keys (before loading them at start).
    @inlinable
    public mutating func reserveCapacity(_ capacity: Int) {
        guard capacity > entries.count else { return }
        entries.reserveCapacity(capacity)
        arena.reserveCapacity(capacity * 32)
        if Self.bucketCount(for: capacity) > index.count { rebuild(capacity: capacity) }
    }

    // MARK: Keys

    /// Calls `body` with the bytes a key is kept as: lowercase hex of an even length as the bytes it spells,
    /// anything else as its UTF-8.
    @inlinable
    static func withKey<R>(_ key: String, _ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
        var key = key
        return key.withUTF8 { utf8 in
            let count = utf8.count
            guard count % 2 == 0, count > 0, count <= 2 * maximumKeyLength,
                utf8.allSatisfy({ Hex.lowercaseDigitValue($0) != nil })
            else {
                return body(UnsafeRawBufferPointer(utf8), false)
            }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count / 2) { packed in
                for index in 0..<count / 2 {
                    let high = Hex.lowercaseDigitValue(utf8[2 * index])!
                    packed[index] = high << 4 | Hex.lowercaseDigitValue(utf8[2 * index + 1])!
                }
                return body(UnsafeRawBufferPointer(packed), true)
            }
        }
    }

    /// The key of `entry` as the string it was given as.
    @inlinable
    func key(of entry: Entry) -> String {
        arena.withUnsafeBufferPointer { arena in
            let bytes = UnsafeBufferPointer(rebasing: arena[entry.offset..<entry.offset + entry.length])
            return entry.isHex ? Hex.encode(bytes) : String(decoding: bytes, as: UTF8.self)
        }
    }

    @inlinable
    static func hash(_ bytes: UnsafeRawBufferPointer, isHex: Bool) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        hasher.combine(isHex)
        return hasher.finalize()
    }

    @inlinable
    func matches(_ entry: Entry, _ bytes: UnsafeRawBufferPointer, isHex: Bool) -> Bool {
        guard entry.isLive, entry.isHex == isHex, entry.length == bytes.count else { return false }
        return arena.withUnsafeBytes { arena in
            UnsafeRawBufferPointer(rebasing: arena[entry.offset..<entry.offset + entry.length]).elementsEqual(bytes)
        }
    }

    // MARK: The index

    @inlinable
    func find(_ bytes: UnsafeRawBufferPointer, isHex: Bool) -> Int? {
        guard !index.isEmpty else { return nil }
        let mask = index.count - 1
        var bucket = Self.hash(bytes, isHex: isHex) & mask
        while true {
            let slot = index[bucket]
            if slot == 0 { return nil }
            let position = Int(slot) - 1
            if matches(entries[position], bytes, isHex: isHex) { return position }
            bucket = (bucket + 1) & mask
        }
    }

    @inlinable
    mutating func append(_ bytes: UnsafeRawBufferPointer, isHex: Bool, value: Value) {
        precondition(bytes.count <= Self.maximumKeyLength, "TokenTable: key too long")
        // At most 3/4 of the buckets in use, tombstones included.
        // Sized for half again as many live entries, so that a rebuild that mostly drops tombstones leaves room
        // (else a table near 3/4 live would rebuild on every add after a remove).
        if (entries.count + 1) * 4 > index.count * 3 { rebuild(capacity: (count + 1) * 3 / 2) }
        let place = UInt64(arena.count) << 24 | UInt64(bytes.count) << 2 | (isHex ? 2 : 0) | 1
        arena.append(contentsOf: bytes)
        entries.append(Entry(place: place, value: value))
        insertIntoIndex(position: entries.count - 1, hash: Self.hash(bytes, isHex: isHex))
        liveCount += 1
    }

    @inlinable
    mutating func remove(at position: Int) {
        entries[position].place &= ~1
        liveCount -= 1
        // Many removed: compact, so that a table that shrank gives its memory back.
        let removed = entries.count - count
        if removed > 1024, removed > count { rebuild(capacity: count) }
    }

    @inlinable
    mutating func insertIntoIndex(position: Int, hash: Int) {
        let mask = index.count - 1
        var bucket = hash & mask
        while index[bucket] != 0 { bucket = (bucket + 1) & mask }
        index[bucket] = UInt32(position + 1)
    }

    /// Buckets for `capacity` entries: a power of two at least 4/3 of it (and at least 8).
    @inlinable
    static func bucketCount(for capacity: Int) -> Int {
        var buckets = 8
        while buckets * 3 < capacity * 4 { buckets *= 2 }
        return buckets
    }

    /// Drops removed entries and their keys, then indexes the live ones in a table sized for `capacity` (doubled
    /// when it grows, so that appends stay amortised O(1)).
    @inlinable
    mutating func rebuild(capacity: Int) {
        precondition(count < Int(UInt32.max), "TokenTable: too many entries")
        if entries.count > count {
            var keptArena: [UInt8] = []
            keptArena.reserveCapacity(entries.reduce(0) { $1.isLive ? $0 + $1.length : $0 })
            var kept: [Entry] = []
            kept.reserveCapacity(count)
            for var entry in entries where entry.isLive {
                let offset = keptArena.count
                keptArena.append(contentsOf: arena[entry.offset..<entry.offset + entry.length])
                entry.place = UInt64(offset) << 24 | (entry.place & 0xFF_FFFF)
                kept.append(entry)
            }
            arena = keptArena
            entries = kept
        }
        let wanted = Self.bucketCount(for: capacity)
        let buckets = wanted > index.count ? Swift.max(wanted, index.count * 2) : Swift.max(wanted, 8)
        index = [UInt32](repeating: 0, count: buckets)
        for position in entries.indices {
            let entry = entries[position]
            let hash = arena.withUnsafeBytes { arena in
                let key = UnsafeRawBufferPointer(rebasing: arena[entry.offset..<entry.offset + entry.length])
                return Self.hash(key, isHex: entry.isHex)
            }
            insertIntoIndex(position: position, hash: hash)
        }
    }
}

extension TokenTable: Sendable where Value: Sendable {}
extension TokenTable.Entry: Sendable where Value: Sendable {}
