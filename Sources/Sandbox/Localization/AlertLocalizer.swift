// APNs Sandbox — alert strings looked up in an app's Localizable.strings, as the device does (§5).

/// Resolves `title-loc-key`, `subtitle-loc-key` and `loc-key` against an app's strings for a device locale.
///
/// ### Lookup
/// For the locale `fr_CA` the tables are tried in this order, key by key (the first table that has the key
/// wins): `fr_CA`, `fr-CA`, `fr`, then `Base`, then `en` (the usual development language; Apple's `Base.lproj`
/// first, as Xcode projects keep their base strings there). Longer locales drop one component at a time
/// (`zh_Hans_TW` → `zh_Hans_TW`, `zh-Hans-TW`, `zh_Hans`, `zh-Hans`, `zh`). Language codes compare exactly
/// as written in the app's strings. When no table has the key, the key itself is used as the format (what
/// `Bundle.localizedString(forKey:value:table:)` returns), so a missing key shows the raw key text.
///
/// ### Formatting
/// See ``format(_:arguments:)``: `%@`, `%n$@`, `%%`, and numeric conversions fed with the string arguments.
public struct AlertLocalizer: Sendable {
    /// Localizable.strings per language: `["en": ["GREETING": "Hello %@"], "fr": […]]`.
    public var strings: [String: [String: String]]

    /// A localizer over one app's strings (`AppRecord.strings`).
    public init(strings: [String: [String: String]]) {
        self.strings = strings
    }

    /// The language tables tried for `locale`, most specific first, ending with `Base` and `en`.
    public static func searchOrder(for locale: String) -> [String] {
        var order: [String] = []
        func add(_ name: String) {
            if !name.isEmpty, !order.contains(name) { order.append(name) }
        }
        var parts = locale.split(whereSeparator: { $0 == "_" || $0 == "-" }).map(String.init)
        // A POSIX suffix (`fr_CA.UTF-8`, `de_DE@euro`) is not part of the language.
        if let last = parts.last, let cut = last.firstIndex(where: { $0 == "." || $0 == "@" }) {
            parts[parts.count - 1] = String(last[..<cut])
        }
        add(locale)
        while !parts.isEmpty {
            add(parts.joined(separator: "_"))
            add(parts.joined(separator: "-"))
            parts.removeLast()
        }
        add("Base")
        add("en")
        return order
    }

    /// The format string for `key` in `locale`, or nil when no table in the search order has it.
    public func format(forKey key: String, locale: String) -> String? {
        for language in Self.searchOrder(for: locale) {
            if let format = strings[language]?[key] { return format }
        }
        return nil
    }

    /// The displayed text for `key` with `arguments` in `locale` (the key itself when it is missing).
    public func localize(key: String, arguments: [String], locale: String) -> String {
        Self.format(format(forKey: key, locale: locale) ?? key, arguments: arguments)
    }

    /// Formats like `String(format:)` with string arguments only.
    ///
    /// - `%@` takes the next argument; `%n$@` takes argument `n` (1-based) and does not move the sequence.
    /// - `%%` is a literal `%`.
    /// - `%d`, `%i`, `%u`, `%s`, `%f`, `%g`, `%e`, `%x`, `%X`, `%o`, `%c` (with optional flags, width, precision
    ///   and `h`/`l`/`ll`/`q`/`z`/`t`/`j`/`L` length modifiers) are treated like `%@`: the argument's text is
    ///   inserted as is, since push arguments are always strings. Flags, width and precision are ignored.
    /// - A missing argument (too few, or `n` out of range) becomes the empty string.
    /// - A `%` not followed by a known conversion is copied literally.
    public static func format(_ format: String, arguments: [String]) -> String {
        let scalars = Array(format.unicodeScalars)
        var output = String.UnicodeScalarView()
        var next = 0
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            guard scalar == "%" else {
                output.append(scalar)
                index += 1
                continue
            }
            if index + 1 < scalars.count, scalars[index + 1] == "%" {
                output.append("%")
                index += 2
                continue
            }
            guard let spec = Specifier(scalars, at: index + 1) else {
                output.append(scalar)
                index += 1
                continue
            }
            let argumentIndex: Int
            if let position = spec.position {
                argumentIndex = position - 1
            } else {
                argumentIndex = next
                next += 1
            }
            if argumentIndex >= 0, argumentIndex < arguments.count {
                output.append(contentsOf: arguments[argumentIndex].unicodeScalars)
            }
            index = spec.end
        }
        return String(output)
    }

    /// One conversion specification after a `%`: `[n$][flags][width][.precision][length]conversion`.
    private struct Specifier {
        var position: Int?
        /// Index just past the conversion character.
        var end: Int

        private static let conversions: Set<Unicode.Scalar> = ["@", "d", "i", "u", "s", "f", "F", "g", "G", "e", "E",
                                                                "x", "X", "o", "c", "C", "S", "D", "U", "O", "a", "A"]
        private static let flags: Set<Unicode.Scalar> = ["-", "+", " ", "0", "#", "'"]
        private static let lengths: Set<Unicode.Scalar> = ["h", "l", "q", "z", "t", "j", "L"]

        init?(_ scalars: [Unicode.Scalar], at start: Int) {
            var index = start
            func digits() -> Int? {
                var value: Int?
                while index < scalars.count, ("0"..."9").contains(scalars[index]) {
                    value = min((value ?? 0) * 10 + Int(scalars[index].value - 48), 1_000_000)
                    index += 1
                }
                return value
            }
            // `n$` (positional) or the width: digits followed by `$` are a position.
            let positionStart = index
            if let number = digits(), index < scalars.count, scalars[index] == "$" {
                position = number
                index += 1
            } else {
                index = positionStart
            }
            while index < scalars.count, Self.flags.contains(scalars[index]) { index += 1 }
            _ = digits()
            if index < scalars.count, scalars[index] == "." {
                index += 1
                _ = digits()
            }
            while index < scalars.count, Self.lengths.contains(scalars[index]) { index += 1 }
            guard index < scalars.count, Self.conversions.contains(scalars[index]) else { return nil }
            end = index + 1
        }
    }
}
