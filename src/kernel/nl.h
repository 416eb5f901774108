/*
 * nl.h - private helpers of the kernel module: netlink sockets.
 */
#ifndef CTSYNCD_KERNEL_NL_H
#define CTSYNCD_KERNEL_NL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct mnl_socket;

/*
 * A non-blocking NETLINK_NETFILTER socket bound to `groups` (bit n-1 =
 * nfnetlink group n).  Returns NULL with *err = -errno.
 */
struct mnl_socket *nl_open(unsigned groups, int *err);

/*
 * Set the receive (or send) buffer to about `bytes` as the kernel reports
 * it (SO_*BUFFORCE of bytes/2, the kernel doubles; SO_*BUF if not
 * permitted).  Returns the size now in force, in bytes.
 */
uint32_t nl_set_rcvbuf(int fd, uint32_t bytes);
uint32_t nl_set_sndbuf(int fd, uint32_t bytes);
uint32_t nl_get_rcvbuf(int fd);
/* Bytes queued for reading (SO_MEMINFO); false if the kernel does not tell. */
bool nl_get_rmem(int fd, uint32_t *queued);

/* Monotonic time in microseconds. */
uint64_t nl_now_us(void);

#endif
