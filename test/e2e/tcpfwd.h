/* tcpfwd.h -- a TCP forwarder on 127.0.0.1 for tests and benchmarks: each
 * connection accepted goes to the port `target` names, what the far side
 * sends can be delayed by `delay_ms` per read (a slow API server, a watch
 * that lags), and `partitioned` refuses new connections while `gen`, bumped,
 * ends the open ones (within 0.5 s). bin/soak's front and API proxy, and the
 * e2e cases that need a watch behind the real one. */
#ifndef GP_TCPFWD_H
#define GP_TCPFWD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct tcpfwd {
    int lfd, port;               /* the listening socket and its port (tcpfwd_start) */
    _Atomic int target;          /* port connections go to; 0 = none (refused) */
    _Atomic int delay_ms;
    atomic_bool partitioned;
    _Atomic unsigned gen;        /* bumped by a cut: connections of older generations end */
    atomic_long conns;           /* connections accepted so far */
    pthread_t acceptor;
} tcpfwd;

/* Listens on an ephemeral port of 127.0.0.1 and starts accepting; f zeroed
 * but for target / delay_ms. Returns 0, or -1 (errno says why). */
int tcpfwd_start(tcpfwd *f);
/* Ends every connection and stops accepting. */
void tcpfwd_stop(tcpfwd *f);

#endif
