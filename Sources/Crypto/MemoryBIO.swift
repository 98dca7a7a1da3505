// APNs Sandbox — scoped OpenSSL memory BIOs for PEM encoding and decoding.
import CLibShims
import COpenSSL

/// Scoped helpers around OpenSSL memory BIOs.
///
/// The `BIO` pointer handed to `body` is valid only for the duration of the call and is freed
/// afterwards; it must not escape the closure.
enum MemoryBIO {
    /// Runs `body` with an empty writable memory BIO and returns everything written to it.
    /// - Parameter body: Writes into the BIO; returns `false` on failure.
    /// - Throws: `CryptoError.openSSL` when the BIO cannot be created or `body` fails.
    static func collecting(_ what: String, _ body: (OpaquePointer) -> Bool) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("BIO_new failed") }
        defer { BIO_free(bio) }
        guard body(bio) else { throw CryptoError.openSSL("could not encode \(what)") }
        var data: UnsafeMutablePointer<CChar>?
        let length = CLibShims_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// Runs `body` with a read-only memory BIO over `bytes`.
    /// - Throws: `CryptoError.openSSL` when the BIO cannot be created, or whatever `body` throws.
    static func reading<Result>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> Result) throws -> Result {
        try bytes.withUnsafeBytes { buffer in
            guard let length = Int32(exactly: buffer.count),
                  let bio = BIO_new_mem_buf(buffer.baseAddress, length)
            else {
                throw CryptoError.openSSL("BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }
}
