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
 * -s` always finds the socket.  SIGHUP reads cfg->path again and changes
 * `cfg` in place (reload.c).  Returns the process exit status.
 */
int daemon_run(struct config *cfg, bool daemonize);

#endif
