// APNs Sandbox — strings that many records share, each kept once.

/// Strings by number and numbers by string: a record of a million keeps a bundle ID or a locale as a number
/// instead of a string of its own (the device tables keep bundle IDs and locales in one table, a locale in 16
/// bits: past 65,536 strings a device with a new locale is kept whole instead of packed). Numbers are never
/// reused: the table holds every string it was given (a few bundle IDs and locales in practice). Not
/// thread-safe: its owner locks.
public struct InternTable: Sendable {
    private var strings: [String] = []
    private var numbers: [String: UInt32] = [:]

    public init() {}

    /// The number of `string`, given one now if it has none.
    public mutating func number(for string: String) -> UInt32 {
        if let number = numbers[string] { return number }
        let number = UInt32(strings.count)
        strings.append(string)
        numbers[string] = number
        return number
    }

    /// The number of `string`, nil when it has none.
    public func existingNumber(for string: String) -> UInt32? { numbers[string] }

    public subscript(number: UInt32) -> String { strings[Int(number)] }
}
