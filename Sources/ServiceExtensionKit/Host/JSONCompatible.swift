// APNs Sandbox — ServiceExtensionKit: turning `userInfo` values into something JSONSerialization accepts.

import Foundation

/// Converts the `Any` values an extension may put in `userInfo` into JSON values, so writing the content
/// never fails: dictionaries get string keys, `Date` becomes ISO 8601 text, `Data` base64, `URL` its string,
/// non-finite numbers `null`, and anything else its description.
enum JSONCompatible {
    static func value(_ value: Any) -> Any {
        if let unwrapped = unwrapOptional(value) {
            return convert(unwrapped)
        }
        return NSNull()
    }

    static func dictionary(_ dictionary: [AnyHashable: Any]) -> [String: Any] {
        var result: [String: Any] = [:]
        for (key, element) in dictionary {
            result[keyString(key)] = value(element)
        }
        return result
    }

    private static func convert(_ value: Any) -> Any {
        switch value {
        case let string as String: return string
        case let number as NSNumber: return finite(number)
        case let bool as Bool: return bool
        case let int as Int: return int
        case let double as Double: return double.isFinite ? double : NSNull()
        case let float as Float: return float.isFinite ? Double(float) : NSNull()
        case let dictionary as [AnyHashable: Any]: return self.dictionary(dictionary)
        case let dictionary as [String: Any]: return self.dictionary(dictionary)
        case let array as [Any]: return array.map { self.value($0) }
        case is NSNull: return NSNull()
        case let date as Date: return ISO8601DateFormatter().string(from: date)
        case let data as Data: return data.base64EncodedString()
        case let url as URL: return url.absoluteString
        case let uuid as UUID: return uuid.uuidString
        case let integer as any BinaryInteger: return Int(truncatingIfNeeded: integer)
        default: return String(describing: value)
        }
    }

    private static func finite(_ number: NSNumber) -> Any {
        if let double = number as? Double, !double.isFinite { return NSNull() }
        return number
    }

    private static func keyString(_ key: AnyHashable) -> String {
        if let string = key.base as? String { return string }
        return String(describing: key.base)
    }

    /// `nil` for `Optional.none` wrapped in `Any`; the value (unwrapped) otherwise.
    private static func unwrapOptional(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        guard let child = mirror.children.first else { return nil }
        return unwrapOptional(child.value)
    }
}
