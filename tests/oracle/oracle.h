/*
 * oracle.h - libnetfilter_conntrack as the test oracle of ctsyncd's own
 * ctnetlink codec (src/kernel/ct_attr.c, exp_attr.c) and printer
 * (src/flow/format.c).
 *
 * The oracle side: random conntrack and expectation objects of the library
 * shaped as the kernel sends them, the messages the library builds from
 * them, and the model of what ctsyncd must make of a library object (the
 * reading that doc/protocol.md and include/kernel/kernel.h promise).  The
 * checks (check_oracle_ct.c, check_oracle_exp.c) compare ctsyncd with the
 * library field by field.
 */
#ifndef CTSYNCD_TESTS_ORACLE_H
#define CTSYNCD_TESTS_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libnetfilter_conntrack/libnetfilter_conntrack.h>

#include "flow/flow.h"

/* splitmix64: one seed gives the same states on every machine. */
struct rng {
	uint64_t s;
};

uint64_t rng_next(struct rng *r);
/* Uniform in [0, n); n > 0. */
uint32_t rng_below(struct rng *r, uint32_t n);
/* True with probability 1/n. */
bool rng_one_in(struct rng *r, uint32_t n);

/*
 * The run's seed and size: ORACLE_SEED and ORACLE_STATES from the
 * environment, else the defaults; printed by the checks so that a failure
 * can be replayed.
 */
uint64_t oracle_seed(void);
unsigned oracle_states(unsigned dflt);

/* Room for any message built here (the kernel's messages are well under it). */
#define ORACLE_MSG_MAX 8192

/*
 * A conntrack as the kernel reports it (event or dump): both tuples, the
 * reply tuple translated by random NAT, random status bits, and each
 * optional attribute with some probability.  `ct` must be new (empty).
 */
void oracle_random_ct(struct rng *r, struct nf_conntrack *ct);

/*
 * The message the kernel would send for `ct`: what nfct_nlmsg_build() puts,
 * plus the attributes only the kernel sends (counters, timestamps, id, use,
 * secmark), each with some probability.  `type` is IPCTNL_MSG_CT_NEW or
 * _DELETE, `flags` the netlink flags.  Returns the length, or -1.
 */
int oracle_kernel_msg(struct rng *r, void *buf, size_t cap, const struct nf_conntrack *ct,
		      uint16_t type, uint16_t flags);

/*
 * What ctsyncd must make of a conntrack message that the library parsed
 * into `ct`: the kernel_ct_parse() contract applied to the library's
 * reading (NAT derived from the reply tuple as doc/protocol.md §2.7 says,
 * counters and timestamps in ff->counters, normalised).
 */
void oracle_model_flow(const struct nf_conntrack *ct, struct flow_full *ff);

/*
 * The object conntrackd 1.4.7 holds for a state it prints with -i / -e:
 * internal (from the kernel): every attribute but the timeout, the
 * counters and the use count; external (from a sync message): the
 * original tuple and what the sync message carries, no reply tuple and no
 * timeout.  Built from ctsyncd's flow `ff`.
 */
void oracle_ct_of_flow(const struct flow_full *ff, bool internal, struct nf_conntrack *ct);

/*
 * Compare two states field by field.  Returns true when equal; otherwise
 * writes "field: expected X, got Y" for the first difference into `why`.
 */
bool oracle_flow_equal(const struct flow_full *want, const struct flow_full *got, char *why,
		       size_t cap);
bool oracle_exp_equal(const struct flow_exp *want, const struct flow_exp *got, char *why,
		      size_t cap);

/* One tuple of the library (orig, repl or master attributes) into a flow_tuple. */
enum oracle_dir { ORACLE_ORIG, ORACLE_REPL, ORACLE_MASTER };
void oracle_tuple_of_ct(const struct nf_conntrack *ct, enum oracle_dir dir, struct flow_tuple *t,
			bool *has_ports, bool *has_icmp);

/* Protocols whose tuple has two 16-bit ports, as ctsyncd counts them (GRE: its keys). */
bool oracle_l4_has_ports(uint8_t p);

#endif
