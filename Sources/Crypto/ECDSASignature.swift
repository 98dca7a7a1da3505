// APNs Sandbox — conversion between the two encodings of an ECDSA P-256 signature.
import CLibShims
import COpenSSL

/// Converts ECDSA P-256 signatures between JWS raw form (`r || s`, each 32 bytes big-endian,
/// RFC 7518 §3.4) and the DER `ECDSA-Sig-Value` SEQUENCE { INTEGER r, INTEGER s } that OpenSSL
/// signs and verifies (RFC 3279 §2.2.3).
enum ECDSASignature {
    /// Bytes in one P-256 scalar (`r` or `s`).
    static let scalarLength = 32
    /// Bytes in a raw P-256 signature.
    static let rawLength = 2 * scalarLength

    /// The DER form of a 64-byte raw signature, or `nil` when `raw` is not 64 bytes long.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == rawLength else { return nil }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, Int32(scalarLength), nil),
             BN_bin2bn(buffer.baseAddress.map { $0 + scalarLength }, Int32(scalarLength), nil))
        }
        guard let signature = ECDSA_SIG_new() else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        // On success ECDSA_SIG_set0 owns r and s; on failure they are still ours.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    /// The 64-byte raw form of a DER signature, or `nil` when `der` is not exactly one DER
    /// `ECDSA-Sig-Value` or `r` or `s` does not fit in 32 bytes.
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        guard let signature = der.withUnsafeBufferPointer({ buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            let parsed = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            // Trailing bytes after the SEQUENCE make the input something else than one signature.
            guard let parsed, cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                ECDSA_SIG_free(parsed)
                return nil
            }
            return parsed
        }) else { return nil }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: rawLength)
        let fits = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress,
                  let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature),
                  BN_is_negative(r) == 0, BN_is_negative(s) == 0
            else { return false }
            return BN_bn2binpad(r, base, Int32(scalarLength)) == Int32(scalarLength)
                && BN_bn2binpad(s, base + scalarLength, Int32(scalarLength)) == Int32(scalarLength)
        }
        return fits ? raw : nil
    }
}
