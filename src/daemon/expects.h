/*
 * expects.h - the expectation caches (Sync { Options { ExpectationSync } }):
 * the internal one (the kernel's expectations whose master is in the
 * internal conntrack cache and whose helper the option names) and the
 * external one (the peer's), with their kernel work: events, dumps, commit,
 * direct injection, flushes, and the control requests about them.
 *
 * caches.c owns this object and hands it what it shares: the internal
 * conntrack table (an expectation is kept only while its master is there,
 * as 1.4.7 does), the event socket's expectation messages and the writer.
 */
#ifndef CTSYNCD_EXPECTS_H
#define CTSYNCD_EXPECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

struct config;
struct control_request;
struct exp_table;
struct flow_exp;
struct flow_table;
struct loop;
struct report;

/* Writer cookies of expectation requests carry this bit (caches.c routes their failures here). */
#define EXPECTS_COOKIE (1ull << 62)

/* Told about every change of the internal table that the peer should learn. */
struct expects_listener {
	void (*changed)(void *arg, uint32_t xh);
	void (*forget)(void *arg, uint32_t xh);         /* about to be deleted untold */
	void *arg;
};

struct expects;

/* 0 or -errno.  `internal_ct` and `writer` outlive the object. */
int expects_new(struct expects **out, const struct config *cfg, struct loop *loop,
		struct flow_table *internal_ct, struct kernel_writer *writer, uint32_t seed);
void expects_free(struct expects *x);
void expects_set_listener(struct expects *x, const struct expects_listener *l);
struct exp_table *expects_internal(struct expects *x);

/* An expectation event from the event socket (kernel_events_cb.on_expect). */
void expects_on_event(struct expects *x, const void *msg, size_t len, bool own_write);
/*
 * Dump the kernel's expectations into the internal table; those no longer
 * there leave it.  `tell`: the listener hears of the differences (after an
 * overrun); otherwise nothing is sent (start-up, -R).  `req`, if not
 * NULL, is answered when the dump ends.  Returns 0 or -errno.
 */
int expects_load(struct expects *x, bool tell, struct control_request *req);
/* The peer acknowledged the EXP_DEL of dead entry `xh`. */
void expects_forget_dead(struct expects *x, uint32_t xh);

/* An expectation from the peer (WIRE_T_EXP_NEW/UPD/DEL).  0 or -errno, counted. */
int expects_apply_remote(struct expects *x, uint8_t type, const struct flow_exp *e);
/*
 * Write the external table into the kernel (after the conntracks: an
 * expectation needs its master).  Synchronous: expectations are few.
 * Writes one line of results into `line` (no newline); returns the failures.
 */
uint64_t expects_commit(struct expects *x, char *line, size_t cap);
/* A failed request with EXPECTS_COOKIE. */
void expects_write_error(struct expects *x, enum kernel_op op, uint64_t cookie, int err);

void expects_flush(struct expects *x, bool internal, bool external, struct control_request *req);
/* -F expect: flush the kernel's expectation table.  0 or -errno. */
int expects_kernel_flush(struct expects *x, struct control_request *req);
/* -i / -e expect: text lines (as 1.4.7's, with the age) or, with `xml`, 1.4.7's XML. */
void expects_dump(struct expects *x, struct control_request *req, bool internal, bool xml);
/* The expectation sections of -s cache and -s expect. */
void expects_report(struct expects *x, struct report *r);

#endif
