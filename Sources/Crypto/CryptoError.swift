// APNs Sandbox — the Crypto module's error type.
import COpenSSL
import Foundation

/// The one error type thrown by the `Crypto` module.
///
/// Each error carries a short description of what failed, the source location that threw it,
/// and the text of OpenSSL's thread-local error queue at the time it was created (the queue is
/// drained, so a later error never reports a stale OpenSSL reason).
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case keyGeneration = "key generation failed"
        case certificateIssuance = "certificate issuance failed"
        case invalidPEM = "invalid PEM data"
        case invalidName = "invalid subject alternative name"
        case keyMismatch = "key does not match certificate"
        case missingFile = "missing file"
        case fileSystem = "file system error"
        case openSSL = "OpenSSL call failed"
        case unsupportedKey = "unsupported key"
        case signing = "signing failed"
        case invalidCertificate = "invalid certificate"
        case invalidRequest = "invalid certificate request"
    }

    private let code: Code
    /// What failed, in words (for example which file could not be parsed).
    public let message: String
    /// OpenSSL's queued error strings, joined with "; " (empty when the queue was empty).
    public let openSSLErrors: String
    private let fileID: String
    private let line: Int

    private init(_ code: Code, _ message: String, drainOpenSSL: Bool, fileID: String, line: Int) {
        self.code = code
        self.message = message
        self.openSSLErrors = drainOpenSSL ? Self.drainOpenSSLErrorQueue() : ""
        self.fileID = fileID
        self.line = line
    }

    public var description: String {
        var text = "CryptoError.\(code) (\(code.rawValue)): \(message)"
        if !openSSLErrors.isEmpty { text += " [OpenSSL: \(openSSLErrors)]" }
        return text + " (\(fileID):\(line))"
    }

    /// Key pair generation failed inside OpenSSL.
    static func keyGeneration(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.keyGeneration, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// Building or signing a certificate failed inside OpenSSL.
    static func certificateIssuance(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.certificateIssuance, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// A PEM file or buffer held no parsable certificate or key.
    static func invalidPEM(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.invalidPEM, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// A requested name is neither a valid DNS name nor an IP address.
    static func invalidName(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.invalidName, message, drainOpenSSL: false, fileID: fileID, line: line)
    }

    /// A private key file does not belong to the certificate next to it.
    static func keyMismatch(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.keyMismatch, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// A file the module needs (for example the CA key next to an existing CA) is absent.
    static func missingFile(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.missingFile, message, drainOpenSSL: false, fileID: fileID, line: line)
    }

    /// A file system call failed; `errno` is rendered with `strerror`.
    static func fileSystem(
        _ message: String, errno code: Int32, fileID: String = #fileID, line: Int = #line
    ) -> CryptoError {
        let reason = String(cString: strerror(code))
        return CryptoError(.fileSystem, "\(message): \(reason) (errno \(code))", drainOpenSSL: false,
                           fileID: fileID, line: line)
    }

    /// Any other OpenSSL call returned failure.
    static func openSSL(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.openSSL, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// A key parsed fine but is not what the caller needs (ES256 needs EC on the P-256 curve).
    static func unsupportedKey(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.unsupportedKey, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// Making a signature failed inside OpenSSL.
    static func signing(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.signing, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// Certificate bytes are not a certificate, or one of its fields is malformed.
    static func invalidCertificate(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.invalidCertificate, message, drainOpenSSL: true, fileID: fileID, line: line)
    }

    /// A certificate request holds a value that cannot go into a certificate (empty bundle ID, …).
    static func invalidRequest(_ message: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        CryptoError(.invalidRequest, message, drainOpenSSL: false, fileID: fileID, line: line)
    }

    /// Empties the calling thread's OpenSSL error queue, returning its entries oldest first.
    static func drainOpenSSLErrorQueue() -> String {
        var entries: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            entries.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return entries.joined(separator: "; ")
    }
}
