/*
 * notify.h - service manager notification (systemd's sd_notify protocol).
 * Without libsystemd at build time, or with `Systemd off`, these do nothing.
 */
#ifndef CTSYNCD_NOTIFY_H
#define CTSYNCD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this build can notify at all. */
bool notify_supported(void);
void notify_ready(void);
void notify_stopping(void);
void notify_watchdog(void);
/* The watchdog period the service manager asked for, in ms; 0 = none. */
uint64_t notify_watchdog_ms(void);

#endif
