// APNs Sandbox — helpers shared by the Crypto tests: temporary directories and the openssl CLI.
import Foundation
import TestProcessSupport

/// Runs `body` with a fresh temporary directory that is removed afterwards.
func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("crypto-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    try body(path)
}

/// The bytes of the file at `path`.
func read(_ path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Writes `bytes` to `path`.
func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Runs `/usr/bin/openssl` (an independent checker) and returns its exit status and combined output.
func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
    // posix_spawn, not Foundation's Process (its run() crashes now and then on this toolchain).
    let (status, data) = try runToCompletion("/usr/bin/openssl", arguments: arguments, stderr: .stdout)
    return (status, String(decoding: data, as: UTF8.self))
}

/// Runs openssl and fails with its output unless it exits 0.
@discardableResult
func requireOpenSSL(_ arguments: [String]) throws -> String {
    let result = try openssl(arguments)
    guard result.status == 0 else {
        let command = "openssl " + arguments.joined(separator: " ")
        throw OpenSSLCommandFailed(description: "\(command) → \(result.status): \(result.output)")
    }
    return result.output
}

struct OpenSSLCommandFailed: Error, CustomStringConvertible {
    let description: String
}

/// Lowercase hex of `bytes`.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
