/*
 * opts.c -- the libbaton options of every lockbench session: the cluster,
 * the timeouts and ttl of the command line, and its TLS files and token.
 */
#include <string.h>

#include "baton/baton.h"
#include "tests/bench/bench.h"

void bench_opts(const struct cfg *cfg, baton_opts *o)
{
    memset(o, 0, sizeof *o);
    o->endpoints = cfg->endpoints;
    o->connect_timeout_ms = cfg->connect_timeout_ms;
    o->op_timeout_ms = cfg->op_timeout_ms;
    o->session_ttl_ms = cfg->ttl_ms;
    o->tls_ca_file = cfg->cacert;
    o->tls_cert_file = cfg->cert;
    o->tls_key_file = cfg->key;
    o->token = cfg->token;
}
