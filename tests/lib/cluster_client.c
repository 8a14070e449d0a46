/*
 * cluster_client.c -- libbaton's options for a harness cluster
 * (cluster.h, cluster_client_opts): its endpoints, and what its security
 * bits ask a client to bring.
 */
#include <limits.h>
#include <stdio.h>

#include "tests/lib/cluster.h"
#include "tests/lib/runner.h"

void cluster_client_opts(const struct cluster *c, baton_opts *o)
{
    /* baton_opts keeps pointers: the paths need storage that outlives
     * this call (cluster_cert's rotates). */
    static char ca[PATH_MAX + 64], cert[PATH_MAX + 64], key[PATH_MAX + 64];

    o->endpoints = cluster_endpoints(c);
    o->tls_ca_file = o->tls_cert_file = o->tls_key_file = o->token = NULL;
    if (c->secure & CLUSTER_CLIENT_TLS) {
        snprintf(ca, sizeof ca, "%s", cluster_cert(c, "ca", 0));
        snprintf(cert, sizeof cert, "%s", cluster_cert(c, "client", 0));
        snprintf(key, sizeof key, "%s", cluster_cert(c, "client", 1));
        o->tls_ca_file = ca;
        o->tls_cert_file = cert;
        o->tls_key_file = key;
    }
    if (c->secure & CLUSTER_AUTH) o->token = c->admin_token;
}

baton_t *client_connect(const baton_opts *o)
{
    baton_opts with = *o;
    baton_t *b = NULL;
    int rv;

    if (with.connect_timeout_ms == 0) with.connect_timeout_ms = 15000;
    rv = baton_connect(&with, &b);
    if (rv != 0)
        FAIL("baton_connect(%s) as %s: %s: %s", with.endpoints,
             with.client_name ? with.client_name : "-", baton_err_name(rv),
             baton_connect_errmsg());
    return b;
}
