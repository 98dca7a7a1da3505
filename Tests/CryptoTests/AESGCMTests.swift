// APNs Sandbox — tests for AES-256-GCM against the GCM specification's vectors and Python's `cryptography`.
import Foundation
import TestProcessSupport
import Testing

@testable import Crypto

@Suite struct AESGCMTests {
    /// Test cases 13–15 of McGrew & Viega, "The Galois/Counter Mode of Operation" (the AES-256 ones
    /// without additional data), in the combined layout `nonce | ciphertext | tag`.
    static let vectors: [(key: String, nonce: String, plaintext: String, ciphertext: String, tag: String)] = [
        (String(repeating: "00", count: 32), String(repeating: "00", count: 12), "", "",
         "530f8afbc74536b9a963b4f1c4cb738b"),
        (String(repeating: "00", count: 32), String(repeating: "00", count: 12), String(repeating: "00", count: 16),
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
         "b094dac5d93471bdec1a502270e3cc6c"),
    ]

    /// Sealing with the vector's nonce gives its ciphertext and tag; opening gives the plaintext back.
    @Test func specificationVectors() throws {
        for vector in Self.vectors {
            let sealed = try AESGCM.seal(bytes(vector.plaintext), key: bytes(vector.key), nonce: bytes(vector.nonce))
            #expect(hex(sealed) == vector.nonce + vector.ciphertext + vector.tag)
            #expect(try AESGCM.open(combined: sealed, key: bytes(vector.key)) == bytes(vector.plaintext))
        }
    }

    /// A wrong key, a flipped bit anywhere, a truncated input or a bad key length all throw.
    @Test func rejectsWrongKeyTamperingAndBadLengths() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let sealed = try AESGCM.seal(Array("hello".utf8), key: key)
        #expect(sealed.count == 12 + 5 + 16)
        var wrongKey = key
        wrongKey[0] ^= 1
        #expect(throws: AESGCMError.self) { try AESGCM.open(combined: sealed, key: wrongKey) }
        for index in [0, 12, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x80
            let error = #expect(throws: AESGCMError.self) { try AESGCM.open(combined: altered, key: key) }
            #expect(error?.reason == .authenticationFailed)
        }
        #expect(throws: AESGCMError.self) { try AESGCM.open(combined: Array(sealed.prefix(27)), key: key) }
        #expect(throws: AESGCMError.self) { try AESGCM.open(combined: sealed, key: Array(key.prefix(16))) }
        #expect(throws: AESGCMError.self) { try AESGCM.seal([1], key: key, nonce: [1, 2, 3]) }
    }

    /// Random nonces differ between two seals of the same message.
    @Test func randomNoncesDiffer() throws {
        let key = [UInt8](repeating: 1, count: 32)
        let first = try AESGCM.seal(Array("same".utf8), key: key)
        let second = try AESGCM.seal(Array("same".utf8), key: key)
        #expect(first.prefix(12) != second.prefix(12))
        #expect(try AESGCM.open(combined: second, key: key) == Array("same".utf8))
    }

    /// Interoperates with Python's `cryptography` (an independent implementation) in both directions.
    @Test(.enabled(if: pythonHasCryptography())) func interoperatesWithPythonCryptography() throws {
        let key = (0..<32).map { UInt8($0 * 3 & 0xFF) }
        let message = Array("{\"title\":\"Hi\",\"body\":\"from python\"}".utf8)
        let script = """
            import sys, os
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            key = bytes.fromhex(sys.argv[1]); data = bytes.fromhex(sys.argv[2])
            nonce = os.urandom(12)
            sealed = nonce + AESGCM(key).encrypt(nonce, data, None)
            mine = bytes.fromhex(sys.argv[3])
            print(sealed.hex()); print(AESGCM(key).decrypt(mine[:12], mine[12:], None).hex())
            """
        let ours = try AESGCM.seal(message, key: key)
        let lines = try runPython(script, arguments: [hex(key), hex(message), hex(ours)])
        try #require(lines.count == 2)
        #expect(try AESGCM.open(combined: bytes(lines[0]), key: key) == message)
        #expect(lines[1] == hex(message))
    }
}

private func bytes(_ hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

private func pythonHasCryptography() -> Bool {
    (try? runPython("import cryptography.hazmat.primitives.ciphers.aead; print('ok')", arguments: [])) == ["ok"]
}

private func runPython(_ script: String, arguments: [String]) throws -> [String] {
    let (status, data) = try runToCompletion("/usr/bin/env", arguments: ["python3", "-c", script] + arguments)
    guard status == 0 else { return [] }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}
