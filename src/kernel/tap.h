/*
 * src/kernel/tap.h - the BPF event tap's loader and reader (EventSource
 * bpf; doc/bpf-events.md), private to src/kernel: events.c drives it.
 */
#ifndef CTSYNCD_KERNEL_TAP_H
#define CTSYNCD_KERNEL_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/tap_rec.h"

struct kernel_tap;

struct kernel_tap_opts {
	uint32_t ring_bytes;            /* rounded up to a power of two, 256 KiB at least */
};

/*
 * Load the programs, hook tap_packet into this network namespace's IPv4
 * (and, when it has it, IPv6) INPUT and POSTROUTING, and make tap_netlink
 * the filter of the event socket `nl_fd`.  NULL when this kernel or this
 * build cannot, with the reason in `why`.
 */
struct kernel_tap *kernel_tap_open(const struct kernel_tap_opts *o, int nl_fd, char *why, size_t why_len);
void kernel_tap_close(struct kernel_tap *t);

/* A descriptor that turns readable when the ring has records. */
int kernel_tap_fd(const struct kernel_tap *t);

/*
 * Hand every record in the ring to `fn`, in order (`body` is `h->len`
 * bytes, valid during the call).  Returns how many, or -errno.
 */
typedef void (*kernel_tap_fn)(void *arg, const struct tap_hdr *h, const void *body);
int kernel_tap_consume(struct kernel_tap *t, kernel_tap_fn fn, void *arg);

/* Records lost so far (full ring, oversized messages): a rising count calls for a resync. */
uint64_t kernel_tap_lost(const struct kernel_tap *t);

/*
 * The reader polls the ring (true) or waits for it to turn readable
 * (false): while it polls, records are written without a wake-up.
 */
void kernel_tap_set_polling(struct kernel_tap *t, bool polling);

/* Our writers' port ids: their DESTROY events are dropped in the kernel. */
void kernel_tap_set_own(struct kernel_tap *t, const uint32_t *own, unsigned n);

#endif
