#include "CLibShims.h"
#include <string.h>

int CLibShims_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    static const unsigned char preferred[] = { 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    unsigned char *selected = NULL;
    unsigned char selectedLen = 0;
    // SSL_select_next_proto takes a non-const `out`; it only points into `preferred` or `in`.
    if (SSL_select_next_proto(&selected, &selectedLen, preferred, sizeof preferred, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = selected;
    *outlen = selectedLen;
    return SSL_TLSEXT_ERR_OK;
}

void CLibShims_SSL_CTX_use_default_alpn(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, CLibShims_alpn_select, NULL);
}

static int CLibShims_accept_any_chain(int preverify_ok, X509_STORE_CTX *ctx) {
    (void)preverify_ok; (void)ctx;
    return 1;
}

int CLibShims_SSL_CTX_request_client_certificate(SSL_CTX *ctx, const char *caFile) {
    if (SSL_CTX_load_verify_locations(ctx, caFile, NULL) != 1) return 0;
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(caFile);
    if (names == NULL) return 0;
    SSL_CTX_set_client_CA_list(ctx, names);
    static const unsigned char sessionContext[] = "apns-sandbox";
    SSL_CTX_set_session_id_context(ctx, sessionContext, sizeof sessionContext - 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, CLibShims_accept_any_chain);
    return 1;
}

int CLibShims_SSL_peer_certificate_der(SSL *ssl, unsigned char **out) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer == NULL) return -1;
    *out = NULL;
    int length = i2d_X509(peer, out);
    X509_free(peer);
    return length;
}

// MARK: nghttp2

// Declared here (upstream 1.52's header lacks it) and weak: the symbol is resolved at load time if
// libnghttp2 has it, else it is NULL (see the header).
extern void nghttp2_option_set_stream_reset_rate_limit(nghttp2_option *option, uint64_t burst, uint64_t rate)
    __attribute__((weak));

int CLibShims_nghttp2_option_set_stream_reset_rate_limit(nghttp2_option *option, uint64_t burst, uint64_t rate) {
    if (nghttp2_option_set_stream_reset_rate_limit == NULL) return 0;
    nghttp2_option_set_stream_reset_rate_limit(option, burst, rate);
    return 1;
}
