/*
 * attr.h - ctnetlink tuple helpers shared by the conntrack (ct_attr.c) and
 * expectation (exp_attr.c) conversions; private to src/kernel.
 */
#ifndef CTSYNCD_KERNEL_ATTR_H
#define CTSYNCD_KERNEL_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>

#include "kernel/kernel.h"

/* A CTA_TUPLE_* nest into `out` (zeroed first; zone 0), checked against `family`. */
enum kernel_reason kernel_tuple_parse(const struct nlattr *nest, uint8_t family,
				      struct flow_tuple *out);
/* The conntrack attributes inside `nest` (an NFQUEUE packet's NFQA_CT), as kernel_ct_parse(). */
enum kernel_reason kernel_ct_parse_nest(const struct nlattr *nest, uint8_t family,
					struct flow_full *ff);
/* Append `t` as nest `type`; false when `cap` is too small. */
bool kernel_tuple_put(struct nlmsghdr *nlh, size_t cap, uint16_t type, const struct flow_tuple *t);

#endif
