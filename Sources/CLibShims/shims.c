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
