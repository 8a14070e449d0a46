/*
 * shim_connect.c -- shim_connect.so, preloaded (LD_PRELOAD) into the fault
 * harness's clients that reach the cluster through the client proxy
 * (faultproxy's client listeners, proxy.c): every connection they open to
 * a node goes through the proxy, REDIRECTs included.
 *
 *   BATON_FAULT_CONNECT_MAP=P1=Q1,P2=Q2,...
 *
 * connect() to 127.0.0.1:Pi connects to 127.0.0.1:Qi instead. Pi is a
 * node's client port, Qi the proxy's listener for this client and that
 * node. Why a shim: a REDIRECT names the leader's client address as the
 * cluster knows it (the node's own port), and libbaton connects to it
 * directly (client/async_conn.c), so a client given only the proxy's
 * addresses would still slip past the proxy after its first REDIRECT --
 * and a client cut off from the new leader would find it anyway. The
 * connection stays TLS from end to end: the proxy forwards bytes, and the
 * host dialled is 127.0.0.1 either way, which the nodes' certificates
 * name.
 *
 * fault_shim_connect_ports() tells the client the shim is in (and how many
 * ports it maps): a client asked to go through the proxy refuses to run
 * without it (client.c).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MAP_MAX 16

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static connect_fn real_connect;
static struct {
    uint16_t from, to;
} map[MAP_MAX];
static int n_map;

__attribute__((constructor)) static void shim_connect_init(void)
{
    const char *s = getenv("BATON_FAULT_CONNECT_MAP");

    real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
    while (s && *s && n_map < MAP_MAX) {
        char *end;
        unsigned long from = strtoul(s, &end, 10), to;
        if (*end != '=') break;
        to = strtoul(end + 1, &end, 10);
        if (from == 0 || from > 65535 || to == 0 || to > 65535) break;
        map[n_map].from = (uint16_t)from;
        map[n_map].to = (uint16_t)to;
        n_map++;
        if (*end != ',') break;
        s = end + 1;
    }
}

__attribute__((visibility("default"))) int fault_shim_connect_ports(void)
{
    return n_map;
}

__attribute__((visibility("default"))) int connect(int fd, const struct sockaddr *sa,
                                                   socklen_t len)
{
    struct sockaddr_in in;

    if (real_connect == NULL) shim_connect_init();
    if (sa != NULL && sa->sa_family == AF_INET && len >= sizeof in) {
        memcpy(&in, sa, sizeof in);
        if (in.sin_addr.s_addr == htonl(INADDR_LOOPBACK))
            for (int k = 0; k < n_map; k++)
                if (ntohs(in.sin_port) == map[k].from) {
                    in.sin_port = htons(map[k].to);
                    return real_connect(fd, (const struct sockaddr *)&in, sizeof in);
                }
    }
    return real_connect(fd, sa, len);
}
