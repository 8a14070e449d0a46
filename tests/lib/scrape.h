/*
 * scrape.h -- the tests' client of a node's --metrics-addr: one HTTP GET
 * over a plain socket (so that no test depends on curl), and the value of
 * a sample in the Prometheus text it answers.
 */
#ifndef BATON_TESTS_SCRAPE_H
#define BATON_TESTS_SCRAPE_H

/*
 * GET path from 127.0.0.1:port (HTTP/1.0, read to EOF, 5 s receive
 * timeout). Returns the status code, or -1 if there was no HTTP answer;
 * *body is the body (malloc'd, NUL-terminated; the caller frees it), NULL
 * when -1 is returned before anything was read.
 */
int http_get(int port, const char *path, char **body);

/*
 * The value of the sample line of text that starts with `key ` exactly
 * (key is a metric name with its labels, e.g. baton_grants_total or
 * baton_acquires_total{outcome="granted"}), or -1 if there is none.
 */
double scrape_value(const char *text, const char *key);

#endif
