/*
 * daemon.h - the daemon's life: start-up, the loop, shutdown.
 */
#ifndef CTSYNCD_DAEMON_H
#define CTSYNCD_DAEMON_H

#include <stdbool.h>

struct config;

/*
 * Run the daemon with a validated configuration until SIGTERM, SIGINT or
 * `-k`.  With `daemonize`, fork: the calling process returns only once the
 * daemon is ready (0) or has failed to start (1), so `ctsyncd -d && ctsyncd
 * -s` always finds the socket.  Returns the process exit status.
 */
int daemon_run(const struct config *cfg, bool daemonize);

#endif
