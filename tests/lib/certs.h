/*
 * certs.h -- test certificates, made with server/certs.sh (run from the
 * repository root, as the tests are).
 *
 *     certs_make_set(dir);                       the standard set, below
 *     certs_run("cert %s mine ca baton-node-2 IP:127.0.0.1", dir);
 *     tls_config.ca_file = certs_path(dir, "ca.pem");
 */
#ifndef BATON_TESTS_CERTS_H
#define BATON_TESTS_CERTS_H

/* Run `server/certs.sh ARGS` (printf-formatted); exits the process with
 * status 1, saying why, if it fails. */
void certs_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* DIR/FILE, in static storage: eight in rotation. */
const char *certs_path(const char *dir, const char *file);

/*
 * The set the TLS unit tests use, in dir: ca, node1 (CN baton-node-1, IP
 * 127.0.0.1, DNS localhost) and client (CN baton-client) of CA "ca";
 * another CA "other" with othernode (as node1) and stranger (CN
 * baton-client); expired (as node1, by ca, expired yesterday); elsewhere
 * (by ca, IP 10.1.2.3 and DNS db.example only). Each as NAME.pem and
 * NAME.key.
 */
void certs_make_set(const char *dir);

#endif
