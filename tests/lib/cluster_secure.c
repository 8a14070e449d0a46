/*
 * cluster_secure.c -- the cluster harness's certificates, auth file and
 * security flags (cluster.h, "security").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/crypto.h"
#include "tests/lib/cluster_int.h"
#include "tests/lib/tls_sock.h"

const char *cluster_cert(const struct cluster *c, const char *name, int key)
{
    static char p[4][PATH_MAX + 64];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s.%s", c->certs, name, key ? "key" : "pem");
    return p[k];
}

void cluster_sock_cfg(const struct cluster *c, struct tls_sock_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (!(c->secure & CLUSTER_CLIENT_TLS)) return;
    cfg->ca_file = cluster_cert(c, "ca", 0);
    cfg->cert_file = cluster_cert(c, "client", 0);
    cfg->key_file = cluster_cert(c, "client", 1);
}

int cluster_token_line(const char *name, const char *role, const char *opts, const char *token,
                       char *line, size_t cap)
{
    uint8_t digest[CRYPTO_SHA256_LEN];
    char hex[CRYPTO_SHA256_HEX + 1];

    if (crypto_sha256(token, strlen(token), digest) != 0) return -1;
    crypto_hex(digest, sizeof digest, hex);
    snprintf(line, cap, "%s %s sha256:%s%s%s\n", name, role, hex, opts && *opts ? " " : "",
             opts ? opts : "");
    return 0;
}

int cluster_token(const char *name, const char *role, const char *opts, char *token,
                  char *line, size_t cap)
{
    uint8_t raw[32];

    if (crypto_random(raw, sizeof raw) != 0) return -1;
    crypto_hex(raw, sizeof raw, token);
    return cluster_token_line(name, role, opts, token, line, cap);
}

int cluster_auth_write(struct cluster *c, const char *lines)
{
    char tmp[PATH_MAX + 8], line[512];
    FILE *f;
    int rv = c->admin_token[0] == '\0'
                 ? cluster_token("harness", "admin", "", c->admin_token, line, sizeof line)
                 : cluster_token_line("harness", "admin", "", c->admin_token, line, sizeof line);

    if (rv != 0) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", c->auth_file);
    f = fopen(tmp, "w");
    if (f == NULL) return -1;
    fprintf(f, "# written by the cluster harness\n%s%s", line, lines ? lines : "");
    if (fclose(f) != 0) return -1;
    return rename(tmp, c->auth_file);
}

int cluster__secure_setup(struct cluster *c, const char *auth_lines)
{
    char cmd[PATH_MAX + 64];

    if (c->secure == 0) return 0;
    snprintf(c->certs, sizeof c->certs, "%s/certs", c->root);
    snprintf(cmd, sizeof cmd, "server/certs.sh cluster '%s' %d", c->certs, CLUSTER_MAX_NODES);
    if (system(cmd) != 0) {
        fprintf(stderr, "# cluster: %s failed\n", cmd);
        return -1;
    }
    if (c->secure & CLUSTER_AUTH) {
        snprintf(c->auth_file, sizeof c->auth_file, "%s/auth", c->root);
        if (cluster_auth_write(c, auth_lines) != 0) {
            fprintf(stderr, "# cluster: cannot write %s\n", c->auth_file);
            return -1;
        }
    }
    return 0;
}

int cluster__secure_args(const struct cluster *c, int i, const char **argv, int argc)
{
    static char paths[CLUSTER_MAX_NODES][2][PATH_MAX + 64];
    char node[16];

    snprintf(node, sizeof node, "node%d", i + 1);
    snprintf(paths[i][0], sizeof paths[i][0], "%s", cluster_cert(c, node, 0));
    snprintf(paths[i][1], sizeof paths[i][1], "%s", cluster_cert(c, node, 1));
    if (c->secure & CLUSTER_PEER_TLS) {
        argv[argc++] = "--peer-cert";
        argv[argc++] = paths[i][0];
        argv[argc++] = "--peer-key";
        argv[argc++] = paths[i][1];
        argv[argc++] = "--peer-ca";
        argv[argc++] = cluster_cert(c, "ca", 0);
    }
    if (c->secure & CLUSTER_CLIENT_TLS) {
        argv[argc++] = "--tls-cert";
        argv[argc++] = paths[i][0];
        argv[argc++] = "--tls-key";
        argv[argc++] = paths[i][1];
        if (c->secure & CLUSTER_CLIENT_CA) {
            argv[argc++] = "--tls-client-ca";
            argv[argc++] = cluster_cert(c, "ca", 0);
        }
    }
    if (c->secure & CLUSTER_AUTH) {
        argv[argc++] = "--auth-file";
        argv[argc++] = c->auth_file;
    }
    return argc;
}

int cluster__ctl_args(const struct cluster *c, const char **argv, int argc)
{
    static char paths[3][PATH_MAX + 64];

    if (c->secure & CLUSTER_CLIENT_TLS) {
        snprintf(paths[0], sizeof paths[0], "%s", cluster_cert(c, "ca", 0));
        snprintf(paths[1], sizeof paths[1], "%s", cluster_cert(c, "client", 0));
        snprintf(paths[2], sizeof paths[2], "%s", cluster_cert(c, "client", 1));
        argv[argc++] = "--cacert";
        argv[argc++] = paths[0];
        argv[argc++] = "--cert";
        argv[argc++] = paths[1];
        argv[argc++] = "--key";
        argv[argc++] = paths[2];
    }
    if (c->secure & CLUSTER_AUTH) {
        argv[argc++] = "--token";
        argv[argc++] = c->admin_token;
    }
    return argc;
}
