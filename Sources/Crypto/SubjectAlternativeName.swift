// APNs Sandbox — a certificate's subjectAltName entry (DNS name or IP address).
import Foundation
import Glibc

/// One subjectAltName entry: a DNS name (stored lowercased) or an IPv4/IPv6 address (stored as
/// its 4 or 16 network-order bytes, so `::1` and `0:0:0:0:0:0:0:1` compare equal).
enum SubjectAlternativeName: Hashable, CustomStringConvertible {
    case dns(String)
    case ipAddress([UInt8])

    /// Detects the kind of `name`: an IPv4 or IPv6 literal becomes `.ipAddress`, anything else
    /// must be a valid DNS name (letters, digits, `-`, dots; an optional leading `*.`).
    /// - Throws: `CryptoError.invalidName` for anything else (for example spaces or commas).
    init(parsing name: String) throws {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if let bytes = Self.ipAddressBytes(trimmed) {
            self = .ipAddress(bytes)
            return
        }
        var host = trimmed.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        guard Self.isValidDNSName(host) else {
            throw CryptoError.invalidName("\"\(name)\" is neither an IP address nor a valid DNS name")
        }
        self = .dns(host)
    }

    /// The name as OpenSSL's extension configuration syntax expects it (`DNS:x` or `IP:x`).
    var configurationValue: String {
        switch self {
        case .dns(let name): "DNS:\(name)"
        case .ipAddress: "IP:\(description)"
        }
    }

    /// The DNS name, or the IP address in its canonical text form (`127.0.0.1`, `::1`).
    var description: String {
        switch self {
        case .dns(let name):
            return name
        case .ipAddress(let bytes):
            let family = bytes.count == 4 ? AF_INET : AF_INET6
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let converted = bytes.withUnsafeBytes { raw in
                inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) != nil
            }
            guard converted else { return bytes.map { String($0, radix: 16) }.joined(separator: ":") }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The 4 or 16 address bytes of an IPv4/IPv6 literal, or `nil` when `text` is not one.
    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func isValidDNSName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*", labels.count > 1 { labels.removeFirst() }
        return labels.allSatisfy { label in
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-" else { return false }
            return label.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        }
    }
}
