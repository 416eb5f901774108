/*
 * notify.c - READY/STOPPING/WATCHDOG through libsystemd, when built with it.
 */
#include "build-config.h"
#include "notify.h"

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

bool notify_supported(void)
{
	return true;
}

void notify_ready(void)
{
	sd_notify(0, "READY=1");
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void notify_watchdog(void)
{
	sd_notify(0, "WATCHDOG=1");
}

uint64_t notify_watchdog_ms(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec / 1000u;
}
#else
bool notify_supported(void)
{
	return false;
}

void notify_ready(void)
{
}

void notify_stopping(void)
{
}

void notify_watchdog(void)
{
}

uint64_t notify_watchdog_ms(void)
{
	return 0;
}
#endif
