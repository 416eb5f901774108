/*
 * nl.c - netlink socket helpers shared by events, dumps and the writer.
 */
#include "nl.h"

#include <errno.h>
#include <sys/socket.h>
#include <linux/sock_diag.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

struct mnl_socket *nl_open(unsigned groups, int *err)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (!nl) {
		*err = -errno;
		return NULL;
	}
	if (mnl_socket_bind(nl, groups, MNL_SOCKET_AUTOPID) < 0) {
		*err = -errno;
		mnl_socket_close(nl);
		return NULL;
	}
	*err = 0;
	return nl;
}

static uint32_t get_buf(int fd, int opt)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &len) < 0)
		return 0;
	return (uint32_t)v;
}

static uint32_t set_buf(int fd, int force, int plain, uint32_t bytes)
{
	int v = (int)(bytes / 2 > INT32_MAX / 2 ? INT32_MAX / 2 : bytes / 2);

	if (v > 0 && setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, plain, &v, sizeof(v));
	return get_buf(fd, plain);
}

uint32_t nl_set_rcvbuf(int fd, uint32_t bytes)
{
	return set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, bytes);
}

uint32_t nl_set_sndbuf(int fd, uint32_t bytes)
{
	return set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, bytes);
}

uint32_t nl_get_rcvbuf(int fd)
{
	return get_buf(fd, SO_RCVBUF);
}

bool nl_get_rmem(int fd, uint32_t *queued)
{
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mi);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0 ||
	    len <= SK_MEMINFO_RMEM_ALLOC * sizeof(mi[0]))
		return false;
	*queued = mi[SK_MEMINFO_RMEM_ALLOC];
	return true;
}

uint64_t nl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
