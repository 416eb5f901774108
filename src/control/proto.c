/*
 * proto.c - pure helpers of the control protocol (control_proto.h).
 */
#include <stddef.h>

#include "control/proto.h"

static const char *const request_names[CTL_REQUEST_MAX] = {
	[CTL_FLUSH_KERNEL_CT] = "flush kernel ct",
	[CTL_RESYNC_KERNEL_CT] = "resync kernel ct",
	[CTL_DUMP_INTERNAL_CT] = "dump internal ct",
	[CTL_DUMP_EXTERNAL_CT] = "dump external ct",
	[CTL_COMMIT_CT] = "commit ct",
	[CTL_FLUSH_CACHES_LEGACY] = "flush caches",
	[CTL_KILL] = "kill",
	[CTL_STATS] = "stats",
	[CTL_SEND_BULK] = "send bulk",
	[CTL_REQUEST_RESYNC] = "request resync",
	[CTL_DUMP_INTERNAL_CT_XML] = "dump internal ct xml",
	[CTL_DUMP_EXTERNAL_CT_XML] = "dump external ct xml",
	[CTL_SCHEDULE_PURGE] = "schedule purge",
	[CTL_STATS_NETWORK] = "stats network",
	[CTL_STATS_CACHE] = "stats cache",
	[CTL_STATS_RUNTIME] = "stats runtime",
	[CTL_STATS_LINK] = "stats link",
	[CTL_STATS_RSQUEUE] = "stats rsqueue",
	[CTL_FLUSH_INTERNAL] = "flush internal",
	[CTL_FLUSH_EXTERNAL] = "flush external",
	[CTL_STATS_PROCESS] = "stats process",
	[CTL_STATS_QUEUE] = "stats queue",
	[CTL_STATS_EXPECT] = "stats expect",
	[CTL_FLUSH_KERNEL_EXP] = "flush kernel expect",
	[CTL_RESYNC_KERNEL_EXP] = "resync kernel expect",
	[CTL_DUMP_INTERNAL_EXP] = "dump internal expect",
	[CTL_DUMP_EXTERNAL_EXP] = "dump external expect",
	[CTL_COMMIT_EXP] = "commit expect",
	[CTL_FLUSH_KERNEL_ALL] = "flush kernel",
	[CTL_RESYNC_KERNEL_ALL] = "resync kernel",
	[CTL_FLUSH_ALL] = "flush",
	[CTL_COMMIT_ALL] = "commit",
	[CTL_DUMP_INTERNAL_EXP_XML] = "dump internal expect xml",
	[CTL_DUMP_EXTERNAL_EXP_XML] = "dump external expect xml",
	[CTL_DUMP_CONFIG] = "dump config",
	[CTL_STATS_HEALTH] = "stats health",
};

const char *ctl_request_name(uint32_t code)
{
	code &= CTL_CODE_MASK;
	if (code < CTL_REQUEST_MAX && request_names[code])
		return request_names[code];
	return "unknown request";
}

const char *ctl_status_name(uint32_t status)
{
	switch (status) {
	case CTL_STATUS_OK:
		return "ok";
	case CTL_STATUS_FAILED:
		return "failed";
	case CTL_STATUS_UNAVAILABLE:
		return "not available";
	case CTL_STATUS_UNKNOWN:
		return "unknown request";
	case CTL_STATUS_BUSY:
		return "busy";
	default:
		return "invalid status";
	}
}

bool ctl_request_is_stats(uint32_t code)
{
	switch (code & CTL_CODE_MASK) {
	case CTL_STATS:
	case CTL_STATS_NETWORK:
	case CTL_STATS_CACHE:
	case CTL_STATS_RUNTIME:
	case CTL_STATS_LINK:
	case CTL_STATS_RSQUEUE:
	case CTL_STATS_PROCESS:
	case CTL_STATS_QUEUE:
	case CTL_STATS_EXPECT:
	case CTL_STATS_HEALTH:
		return true;
	default:
		return false;
	}
}

bool ctl_request_waits(uint32_t code)
{
	switch (code & CTL_CODE_MASK) {
	case CTL_COMMIT_CT:
	case CTL_COMMIT_EXP:
	case CTL_COMMIT_ALL:
		return true;
	default:
		return false;
	}
}

bool ctl_request_takes_origin(uint32_t code)
{
	switch (code & CTL_CODE_MASK) {
	case CTL_COMMIT_ALL:
	case CTL_COMMIT_CT:
	case CTL_COMMIT_EXP:
	case CTL_DUMP_EXTERNAL_CT:
	case CTL_DUMP_EXTERNAL_CT_XML:
	case CTL_DUMP_EXTERNAL_EXP:
	case CTL_DUMP_EXTERNAL_EXP_XML:
		return true;
	default:
		return false;
	}
}
