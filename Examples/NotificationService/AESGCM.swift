// APNs Sandbox — example extension: AES-256-GCM decryption with OpenSSL.
//
// On iOS this file would not exist: the same call is CryptoKit's
// `AES.GCM.open(try AES.GCM.SealedBox(combined: data), using: SymmetricKey(data: key))`. Foundation on Linux has
// no AES-GCM, so the example uses OpenSSL's EVP interface (swift-crypto's `Crypto` module would also do).

import COpenSSL
import Foundation

/// `AES.GCM.open` for a sealed box in CryptoKit's combined layout: nonce (12 bytes) | ciphertext | tag (16 bytes).
enum AESGCM {
    struct OpenError: Error, CustomStringConvertible {
        let description: String
    }

    static let nonceLength = 12
    static let tagLength = 16

    static func open(combined: Data, key: Data) throws -> Data {
        guard key.count == 32 else { throw OpenError(description: "the key is \(key.count) bytes, not 32") }
        guard combined.count >= nonceLength + tagLength else {
            throw OpenError(description: "the sealed box is \(combined.count) bytes, shorter than nonce + tag")
        }
        let bytes = [UInt8](combined)
        let nonce = Array(bytes[0..<nonceLength])
        var tag = Array(bytes[(bytes.count - tagLength)...])
        let ciphertext = Array(bytes[nonceLength..<(bytes.count - tagLength)])
        let keyBytes = [UInt8](key)

        guard let context = EVP_CIPHER_CTX_new() else { throw OpenError(description: "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
            EVP_DecryptInit_ex(context, nil, nil, keyBytes, nonce) == 1
        else { throw OpenError(description: "could not set up AES-256-GCM") }

        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var length: Int32 = 0
        guard EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1 else {
            throw OpenError(description: "EVP_DecryptUpdate failed")
        }
        var total = Int(length)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw OpenError(description: "could not set the tag")
        }
        // GCM's final step writes no bytes; it only checks the tag. `plaintext` has 16 spare bytes anyway.
        let finalOK = plaintext.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            return EVP_DecryptFinal_ex(context, base + total, &length) == 1
        }
        guard finalOK else { throw OpenError(description: "authentication failed (wrong key or altered data)") }
        total += Int(length)
        return Data(plaintext[0..<total])
    }
}
