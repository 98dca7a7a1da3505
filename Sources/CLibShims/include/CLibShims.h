// CLibShims: C macros and library-version differences turned into real, prefixed functions.
//
// Why: Swift cannot import function-like macros (SSL_CTX_set_mode, BIO_get_mem_data,
// deflateInit2, SQLITE_TRANSIENT, sk_* stack macros). Each wrapper below is one macro.
#pragma once
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <zlib.h>
#include <sqlite3.h>
#include <nghttp2/nghttp2.h>

// MARK: OpenSSL (TLS)
static inline long CLibShims_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long CLibShims_SSL_CTX_set_options(SSL_CTX *ctx, long opts) { return (long)SSL_CTX_set_options(ctx, (uint64_t)opts); }
static inline int CLibShims_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_min_proto_version(ctx, v); }
static inline long CLibShims_BIO_pending(BIO *b) { return (long)BIO_ctrl_pending(b); }
static inline long CLibShims_BIO_set_mem_eof_return(BIO *b, int v) { return BIO_set_mem_eof_return(b, v); }
static inline long CLibShims_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long CLibShims_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long CLibShims_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }
static inline long CLibShims_SSL_OP_NO_RENEGOTIATION(void) { return (long)SSL_OP_NO_RENEGOTIATION; }
static inline long CLibShims_SSL_OP_NO_COMPRESSION(void) { return (long)SSL_OP_NO_COMPRESSION; }

/// ALPN selection: prefers `h2`, then `http/1.1`; returns SSL_TLSEXT_ERR_NOACK when nothing matches
/// (the handshake continues without ALPN, and the connection is sniffed for the h2 preface).
int CLibShims_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg);
/// Installs `CLibShims_alpn_select` on the context.
void CLibShims_SSL_CTX_use_default_alpn(SSL_CTX *ctx);
/// Asks clients for a certificate issued by the CAs in `caFile` without requiring one: the verify
/// callback accepts every chain so the handshake never fails on it, and the caller reads the
/// outcome afterwards with SSL_get_verify_result (APNs certificate auth is optional per connection).
/// Returns 1 on success.
int CLibShims_SSL_CTX_request_client_certificate(SSL_CTX *ctx, const char *caFile);
/// The peer certificate as DER (caller frees *out with OPENSSL_free); returns the length or -1.
int CLibShims_SSL_peer_certificate_der(SSL *ssl, unsigned char **out);

// MARK: OpenSSL (X509 stacks)
static inline int CLibShims_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *CLibShims_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }

// MARK: zlib
static inline int CLibShims_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}
static inline int CLibShims_inflateInit2(z_streamp strm, int windowBits) { return inflateInit2(strm, windowBits); }

// MARK: SQLite
static inline sqlite3_destructor_type CLibShims_SQLITE_TRANSIENT(void) { return SQLITE_TRANSIENT; }
// sqlite3_db_config is variadic, which Swift cannot call; this is its (int, int *) form
// (https://sqlite.org/c3ref/db_config.html), e.g. SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE.
static inline int CLibShims_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

// MARK: nghttp2
static inline const char *CLibShims_nghttp2_version_string(void) { return NGHTTP2_VERSION; }
/// nghttp2's own limit on incoming RST_STREAM (a token bucket, default burst 1000 and 33 per second,
/// answered with GOAWAY INTERNAL_ERROR) exists from 1.57, and in Debian 12's patched 1.52
/// (CVE-2023-44487), not in upstream 1.52. The sandbox enforces its own (ENHANCE_YOUR_CALM); this sets
/// the library's, where it exists, so it never fires first. Returns 1 if it exists, 0 if not.
int CLibShims_nghttp2_option_set_stream_reset_rate_limit(nghttp2_option *option, uint64_t burst, uint64_t rate);

// MARK: Crypto (certificates)
// Used by Sources/Crypto to create the local CA and server certificates.

/// EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen, and Swift imports neither.
/// https://www.openssl.org/docs/man3.0/man3/EVP_EC_gen.html
static inline EVP_PKEY *CLibShims_EVP_EC_gen(const char *curve) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
}
/// BIO_get_mem_data is a macro over BIO_ctrl(BIO_CTRL_INFO); returns the length, sets *data.
/// https://www.openssl.org/docs/man3.0/man3/BIO_get_mem_data.html
static inline long CLibShims_BIO_get_mem_data(BIO *b, char **data) { return BIO_get_mem_data(b, data); }
/// The typed stack accessors are macros generated by DEFINE_STACK_OF(GENERAL_NAME).
/// https://www.openssl.org/docs/man3.0/man3/DEFINE_STACK_OF.html
static inline int CLibShims_sk_GENERAL_NAME_num(const GENERAL_NAMES *sk) { return sk_GENERAL_NAME_num(sk); }
static inline GENERAL_NAME *CLibShims_sk_GENERAL_NAME_value(const GENERAL_NAMES *sk, int i) {
    return sk_GENERAL_NAME_value(sk, i);
}
/// OPENSSL_free is a macro over CRYPTO_free(ptr, OPENSSL_FILE, OPENSSL_LINE); frees what
/// ASN1_STRING_to_UTF8 allocates. https://www.openssl.org/docs/man3.0/man3/OPENSSL_free.html
static inline void CLibShims_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }
