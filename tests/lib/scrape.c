/*
 * scrape.c -- a node's /metrics from the tests (scrape.h).
 */
#include "tests/lib/scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int http_get(int port, const char *path, char **body)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {.tv_sec = 5};
    char req[256], *buf = NULL, *p, *grown;
    size_t len = 0, cap = 0;
    int fd, code = -1;
    ssize_t n;

    *body = NULL;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(fd);
        return -1;
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 16384;
            grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                close(fd);
                return -1;
            }
            buf = grown;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    if (buf == NULL) return -1;
    buf[len] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1) code = -1;
    p = strstr(buf, "\r\n\r\n");
    *body = strdup(p ? p + 4 : "");
    free(buf);
    return code;
}

double scrape_value(const char *text, const char *key)
{
    size_t n = strlen(key);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ' ') return strtod(p + n + 1, NULL);
    return -1;
}
