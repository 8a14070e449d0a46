/*
 * http_get.h -- the tests' HTTP client: one GET to a node's --metrics-addr
 * over a plain socket, so that no test depends on curl.
 */
#ifndef BATON_TESTS_HTTP_GET_H
#define BATON_TESTS_HTTP_GET_H

/*
 * GET path from 127.0.0.1:port (HTTP/1.0, read to EOF, 5 s receive
 * timeout). Returns the status code, or -1 if there was no HTTP answer;
 * *body is the body (malloc'd, NUL-terminated; the caller frees it), NULL
 * when -1 is returned before anything was read.
 */
int http_get(int port, const char *path, char **body);

#endif
