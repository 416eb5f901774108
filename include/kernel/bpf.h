/*
 * kernel/bpf.h - `Filter From Kernelspace`: the Filter compiled into a
 * classic BPF program for the conntrack event socket (module `kernel`,
 * pure: no system calls).
 *
 * The program reads the event itself (nlmsghdr, nfgenmsg, attributes) with
 * the kernel's netlink helpers SKF_AD_NLATTR and SKF_AD_NLATTR_NEST, and
 * gives the same verdict as the user-space filter (flow_filter.h) for
 * every conntrack event: protocol of the original tuple; the original
 * source and the reply source (the two real endpoints) against the
 * addresses; the TCP state, when the event carries one.  Whatever it
 * cannot classify (an expectation message, another subsystem, an event
 * without the attributes it looks for) it passes to user space, where the
 * same Filter runs again.
 */
#ifndef CTSYNCD_KERNEL_BPF_H
#define CTSYNCD_KERNEL_BPF_H

#include <stddef.h>

#include <linux/filter.h>

#include "config/config.h"

/*
 * Compile `f` into `prog` (room for `cap` instructions).  Returns the
 * number of instructions, 0 when there is nothing to filter (no Filter
 * part set), -E2BIG when the program would need more than `cap` (too many
 * addresses: keep the Filter in user space), or -EINVAL (an address of
 * another family).  The program starts with a load, as
 * kernel_events_set_filter() wants, and returns 0 (drop) or 0xffffffff.
 */
int kernel_bpf_compile(const struct config_filter *f, struct sock_filter *prog, size_t cap);

#endif
