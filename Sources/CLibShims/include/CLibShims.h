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

// MARK: nghttp2
static inline const char *CLibShims_nghttp2_version_string(void) { return NGHTTP2_VERSION; }
