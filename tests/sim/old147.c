/*
 * old147.c - a model of conntrackd 1.4.7's FTFW endpoint (see old147.h).
 *
 * Every rule here is one of 1.4.7's as doc/protocol.md §3 tells them;
 * the section is named at the place.  Where it is silent the comment says "silent" and what we chose: the
 * simplest reading.
 */
#include "old147.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define DEFAULT_RSQ     131072u         /* ResendQueueSize (protocol.md §3.2) */
#define DEFAULT_WINDOW  300u            /* ACKWindowSize (protocol.md §3.4) */
#define TIMER_MS        1000u           /* the constant ALIVE/ACK timer (protocol.md §3.3) */

enum where { Q_NONE, Q_TX, Q_RS };

/*
 * A queue node: an internal-cache object's (one per object, protocol.md §3.2), or a
 * control message's.  Nodes live in a pool, linked by index (0 = none).
 */
struct qnode {
	uint32_t next, prev;
	uint32_t handle;                /* the object; 0 for a control message */
	uint32_t seq;                   /* Q_RS: the number it was sent with */
	uint32_t from, to;              /* ACK/NACK range */
	uint8_t flags;                  /* control message: WIRE_F_ACK/NACK/RESYNC/ALIVE */
	uint8_t where;
	bool sent;                      /* sent before: the next transmission is a retransmission */
};

struct qlist {
	uint32_t head, tail, len;
};

struct old147 {
	struct old147_config cfg;
	struct old147_ops ops;
	void *arg;
	struct flow_table *internal;    /* user area: uint32_t, the object's queue node */
	struct flow_table *external;
	/*
	 * For the checks only: the keys whose latest state left the rsqueue
	 * unacknowledged (overflow, HELLO flush) and was not queued again
	 * since (see old147_unrepaired()).
	 */
	struct flow_table *lost;

	struct qnode *pool;
	uint32_t npool, free_head;
	struct qlist tx, rs;

	/* sender (protocol.md §3.2, §3.6) */
	bool seq_set;
	uint32_t seq;
	bool hello_phase;
	bool hello_back_pending;
	uint64_t timer_at;

	/* receiver, one per process (protocol.md §3.4) */
	bool recv_init;
	uint32_t last_seq;
	bool ack_pending;
	uint32_t ack_from;
	int64_t window;

	uint64_t now;
	uint32_t tag;                   /* see old147_set_tag() */
	struct old147_stats st;
	struct flow_full scratch, cur;
	uint8_t buf[WIRE_CT_MAX_LEN];
};

static void say(struct old147 *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct old147 *o, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!o->ops.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->ops.log(o->arg, line);
}

static bool before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		perror("sim: old147");
		exit(2);
	}
	return p;
}

static uint32_t window_size(const struct old147 *o)
{
	return o->cfg.ack_window;
}

/* ---- queues ----------------------------------------------------------------------------- */

static uint32_t node_alloc(struct old147 *o)
{
	uint32_t i = o->free_head;

	if (i) {
		o->free_head = o->pool[i].next;
	} else {
		if ((o->npool & (o->npool - 1)) == 0)
			o->pool = xrealloc(o->pool, 2 * (size_t)o->npool * sizeof(*o->pool));
		i = o->npool++;
	}
	memset(&o->pool[i], 0, sizeof(o->pool[i]));
	return i;
}

static struct qlist *list_of(struct old147 *o, uint8_t where)
{
	return where == Q_TX ? &o->tx : &o->rs;
}

static void q_append(struct old147 *o, uint8_t where, uint32_t i)
{
	struct qlist *l = list_of(o, where);
	struct qnode *n = &o->pool[i];

	n->where = where;
	n->next = 0;
	n->prev = l->tail;
	if (l->tail)
		o->pool[l->tail].next = i;
	else
		l->head = i;
	l->tail = i;
	l->len++;
}

static void q_unlink(struct old147 *o, uint32_t i)
{
	struct qnode *n = &o->pool[i];
	struct qlist *l;

	if (n->where == Q_NONE)
		return;
	l = list_of(o, n->where);
	if (n->prev)
		o->pool[n->prev].next = n->next;
	else
		l->head = n->next;
	if (n->next)
		o->pool[n->next].prev = n->prev;
	else
		l->tail = n->prev;
	l->len--;
	n->where = Q_NONE;
	n->next = n->prev = 0;
}

static uint32_t *obj_slot(struct old147 *o, uint32_t h)
{
	return flow_table_user(o->internal, h);
}

/*
 * A node leaves the queues for good: the object reference it held is
 * released.  A dead object whose node goes is gone from the internal
 * cache (protocol.md §3.2: it stays "until its DEL message is ACKed"; what is known
 * of 1.4.7 is silent on the other ways a node goes, a HELLO flush or an rsqueue
 * overflow: we take the simplest reading, the reference is released
 * the same way, so the dead object goes too).
 */
static void mark_lost(struct old147 *o, uint32_t i)
{
	uint32_t h = o->pool[i].handle, lh;

	if (h && flow_table_export(o->internal, h, &o->scratch) == 0 &&
	    flow_table_upsert(o->lost, &o->scratch, 0, &lh) >= 0)
		*(uint32_t *)flow_table_user(o->lost, lh) = o->pool[i].seq;
}

static void node_release(struct old147 *o, uint32_t i)
{
	struct qnode *n = &o->pool[i];
	uint32_t h = n->handle;

	q_unlink(o, i);
	if (h) {
		*obj_slot(o, h) = 0;
		if (flow_table_flags(o->internal, h) & FLOW_ENTRY_DEAD)
			flow_table_delete(o->internal, h);
	}
	n->handle = 0;
	n->next = o->free_head;
	o->free_head = i;
}

/*
 * protocol.md §3.2: enqueueing an object already in the tx queue is a no-op; one in
 * the rsqueue moves to the tx queue; else it gets its node.
 */
static void enqueue_obj(struct old147 *o, uint32_t h)
{
	uint32_t *slot = obj_slot(o, h);
	const struct flow *f = flow_table_flow(o->internal, h);
	uint32_t i = *slot, lh = f ? flow_table_lookup(o->lost, &f->orig) : 0;

	if (lh)
		flow_table_delete(o->lost, lh);         /* it goes again */
	if (i && o->pool[i].where == Q_TX)
		return;
	if (i) {
		q_unlink(o, i);
	} else {
		i = node_alloc(o);
		o->pool[i].handle = h;
		slot = obj_slot(o, h);
		*slot = i;
	}
	q_append(o, Q_TX, i);
}

static void enqueue_ctl(struct old147 *o, uint8_t flags, uint32_t from, uint32_t to)
{
	uint32_t i = node_alloc(o);

	o->pool[i].flags = flags;
	o->pool[i].from = from;
	o->pool[i].to = to;
	q_append(o, Q_TX, i);
}

/* protocol.md §3.2: rsqueue full on insert -> drop the oldest element (head), no resync. */
static void rs_insert(struct old147 *o, uint32_t i, uint32_t seq)
{
	while (o->rs.len >= o->cfg.resend_queue_size && o->rs.head) {
		uint32_t head = o->rs.head;

		if (o->pool[head].handle) {
			o->st.rsq_overflow_data++;
			mark_lost(o, head);
		}
		else
			o->st.rsq_overflow_ctl++;
		node_release(o, head);
	}
	o->pool[i].seq = seq;
	q_append(o, Q_RS, i);
}

/* ---- creation ---------------------------------------------------------------------------- */

static struct flow_table *table_new(uint32_t user_bytes, uint32_t seed)
{
	struct flow_table_options opt = { .buckets = 64, .seed = seed, .user_bytes = user_bytes };
	struct flow_table *t;

	if (flow_table_new(&opt, &t) < 0) {
		perror("sim: old147 table");
		exit(2);
	}
	return t;
}

int old147_new(const struct old147_config *cfg, const struct old147_ops *ops, void *arg,
	       uint64_t now, struct old147 **out)
{
	struct old147 *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->cfg = *cfg;
	if (!o->cfg.resend_queue_size)
		o->cfg.resend_queue_size = DEFAULT_RSQ;
	if (!o->cfg.ack_window)
		o->cfg.ack_window = DEFAULT_WINDOW;
	o->ops = *ops;
	o->arg = arg;
	o->internal = table_new(sizeof(uint32_t), cfg->table_seed);
	o->external = table_new(sizeof(uint32_t), cfg->table_seed ^ 0x5bd1e995u);
	o->lost = table_new(sizeof(uint32_t), cfg->table_seed ^ 0x27d4eb2fu);
	o->npool = 1;                   /* index 0 is "none" */
	o->pool = xrealloc(NULL, sizeof(*o->pool));
	o->hello_phase = true;          /* protocol.md §3.6: HELLO until a HELLO_BACK arrives */
	o->window = window_size(o);
	o->now = now;
	/* protocol.md §3.3: the timer is armed at start; the first message is usually the 1 s ALIVE. */
	o->timer_at = now + TIMER_MS;
	/* protocol.md §3.8: StartupResync queues one RESYNC (from = to = 0) at start, never repeated. */
	if (cfg->startup_resync)
		enqueue_ctl(o, WIRE_F_RESYNC, 0, 0);
	*out = o;
	return 0;
}

void old147_free(struct old147 *o)
{
	if (!o)
		return;
	flow_table_free(o->internal);
	flow_table_free(o->external);
	flow_table_free(o->lost);
	free(o->pool);
	free(o);
}

/* ---- the internal cache ----------------------------------------------------------------- */

/*
 * What is known of 1.4.7 is silent on how a kernel event updates an internal object;
 * the simulated kernel reports whole states, so the object takes the
 * state as it is (a re-created key revives a dead object as a new one).
 */
static uint32_t internal_store(struct old147 *o, const struct flow_full *ff, uint64_t now)
{
	uint32_t h;

	if (flow_table_upsert(o->internal, ff, (uint32_t)(now / 1000), &h) < 0)
		return 0;
	return h;
}

void old147_load(struct old147 *o, const struct flow_full *ff, uint64_t now)
{
	internal_store(o, ff, now);
}

void old147_flow_update(struct old147 *o, const struct flow_full *ff, uint64_t now)
{
	uint32_t h = internal_store(o, ff, now);

	if (h)
		enqueue_obj(o, h);
}

void old147_flow_delete(struct old147 *o, const struct flow_tuple *key, uint64_t now)
{
	uint32_t h = flow_table_lookup(o->internal, key);

	if (!h || (flow_table_flags(o->internal, h) & FLOW_ENTRY_DEAD))
		return;
	/* protocol.md §3.2: dead, hidden, kept until its DEL is ACKed. */
	flow_table_mark_dead(o->internal, h, (uint32_t)(now / 1000));
	enqueue_obj(o, h);
}

/* ---- transmission (protocol.md §3.2) ---------------------------------------------------------------- */

static uint8_t hello_flags(const struct old147 *o)
{
	return (uint8_t)((o->hello_phase ? WIRE_F_HELLO : 0) |
			 (o->hello_back_pending ? WIRE_F_HELLO_BACK : 0));
}

/* protocol.md §3.2: seq = time(NULL) when the first message is built, then +1 for every message. */
static uint32_t take_seq(struct old147 *o, uint64_t now)
{
	if (!o->seq_set) {
		o->seq = o->cfg.clock_base + (uint32_t)(now / 1000);
		o->seq_set = true;
	}
	return o->seq++;
}

static void emit(struct old147 *o, size_t len, uint8_t flags)
{
	o->ops.emit(o->arg, o->buf, len);
	o->st.msg_sent++;
	/* protocol.md §3.6: HELLO_BACK on our next outgoing message, once. */
	if (flags & WIRE_F_HELLO_BACK)
		o->hello_back_pending = false;
}

static uint8_t obj_type(unsigned eflags)
{
	/* protocol.md §3.2: the type comes from the object status at transmit time. */
	if (eflags & FLOW_ENTRY_DEAD)
		return WIRE_T_CT_DEL;
	if (eflags & FLOW_ENTRY_UPDATED)
		return WIRE_T_CT_UPD;
	return WIRE_T_CT_NEW;
}

static void send_obj(struct old147 *o, uint32_t i, uint64_t now)
{
	struct qnode *n = &o->pool[i];
	struct wire_hdr hdr = { 0 };
	int len;

	q_unlink(o, i);
	if (flow_table_export(o->internal, n->handle, &o->scratch) < 0) {
		node_release(o, i);
		return;
	}
	hdr.type = obj_type(flow_table_flags(o->internal, n->handle));
	hdr.flags = hello_flags(o);
	hdr.seq = take_seq(o, now);
	/* protocol.md §2.7: a DEL carries the whole cached object. */
	len = wire_ct_encode(o->buf, sizeof(o->buf), &hdr, &o->scratch, o->cfg.enc_opts, NULL);
	if (len < 0) {
		node_release(o, i);
		return;
	}
	emit(o, (size_t)len, hdr.flags);
	o->st.data_sent++;
	if (n->sent)
		o->st.retransmitted++;
	n->sent = true;
	rs_insert(o, i, hdr.seq);
}

static void send_ctl(struct old147 *o, uint32_t i, uint64_t now)
{
	struct qnode *n = &o->pool[i];
	uint8_t flags = (uint8_t)(n->flags | hello_flags(o));
	uint32_t seq = take_seq(o, now);
	int len;

	q_unlink(o, i);
	len = wire_ctl_encode(o->buf, sizeof(o->buf), flags, seq, n->from, n->to);
	if (len < 0) {
		node_release(o, i);
		return;
	}
	emit(o, (size_t)len, flags);
	if (n->flags & WIRE_F_ACK)
		o->st.ack_sent++;
	else if (n->flags & WIRE_F_NACK)
		o->st.nack_sent++;
	else if (n->flags & WIRE_F_RESYNC)
		o->st.resync_sent++;
	else
		o->st.alive_sent++;
	/* protocol.md §3.2: ACK/NACK/RESYNC are kept in the rsqueue; ALIVE is freed. */
	if (n->flags & (WIRE_F_ACK | WIRE_F_NACK | WIRE_F_RESYNC))
		rs_insert(o, i, seq);
	else
		node_release(o, i);
}

void old147_send(struct old147 *o, uint64_t now)
{
	bool sent = false;

	o->now = now;
	while (o->tx.head) {
		uint32_t i = o->tx.head;

		if (o->pool[i].handle)
			send_obj(o, i, now);
		else
			send_ctl(o, i, now);
		sent = true;
	}
	/* protocol.md §3.3: the timer is re-armed after every transmit batch. */
	if (sent)
		o->timer_at = now + TIMER_MS;
}

bool old147_send_ready(const struct old147 *o)
{
	return o->tx.head != 0;
}

void old147_tick(struct old147 *o, uint64_t now)
{
	o->now = now;
	if (now < o->timer_at)
		return;
	/*
	 * protocol.md §3.3: ACK [ack_from, last] if something was received and not yet
	 * ACKed, else ALIVE.  Silent on the window after a timer ACK: an ACK
	 * restarts it, as the window's own ACK does.
	 */
	if (o->ack_pending && o->recv_init) {
		enqueue_ctl(o, WIRE_F_ACK, o->ack_from, o->last_seq);
		o->ack_pending = false;
		o->window = window_size(o);
	} else {
		enqueue_ctl(o, WIRE_F_ALIVE, 0, 0);
	}
	o->timer_at = now + TIMER_MS;   /* and again by the send that follows */
}

uint64_t old147_deadline(const struct old147 *o)
{
	return o->timer_at;
}

/* ---- reception (protocol.md §3.4) -------------------------------------------------------------------- */

/*
 * The external cache: NEW replaces, UPD lays over what it has (attributes
 * present in the message overwrite, absent ones stay; an all-zero LABELS
 * array clears the labels), DEL removes (protocol.md §6.1).
 */
static void lay_over(struct flow_full *cur, const struct flow_full *m)
{
	uint32_t a = m->flow.attrs;

	if (a & FLOW_A_STATUS)
		cur->flow.status = m->flow.status;
	if (a & FLOW_A_TIMEOUT)
		cur->flow.timeout = m->flow.timeout;
	if (a & FLOW_A_MARK)
		cur->flow.mark = m->flow.mark;
	if (a & FLOW_A_PROTO_STATE)
		cur->flow.proto_state = m->flow.proto_state;
	if (a & FLOW_A_DCCP_ROLE)
		cur->flow.dccp_role = m->flow.dccp_role;
	if (a & FLOW_A_WSCALE) {
		cur->flow.wscale_orig = m->flow.wscale_orig;
		cur->flow.wscale_repl = m->flow.wscale_repl;
	}
	if (a & (FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT)) {
		memcpy(cur->ext.synproxy, m->ext.synproxy, sizeof(cur->ext.synproxy));
		cur->flow.attrs &= ~FLOW_A_SYNPROXY_EXT;
	}
	if (a & FLOW_A_SNAT)
		cur->ext.snat = m->ext.snat;
	if (a & FLOW_A_DNAT)
		cur->ext.dnat = m->ext.dnat;
	if (a & FLOW_A_SPAT)
		cur->ext.spat = m->ext.spat;
	if (a & FLOW_A_DPAT)
		cur->ext.dpat = m->ext.dpat;
	if (a & FLOW_A_NAT_SEQ)
		memcpy(cur->ext.nat_seq, m->ext.nat_seq, sizeof(cur->ext.nat_seq));
	if (a & FLOW_A_SCTP_VTAGS) {
		cur->ext.sctp_vtag_orig = m->ext.sctp_vtag_orig;
		cur->ext.sctp_vtag_repl = m->ext.sctp_vtag_repl;
	}
	if (a & FLOW_A_MASTER)
		cur->ext.master = m->ext.master;
	if (a & FLOW_A_HELPER)
		memcpy(cur->ext.helper, m->ext.helper, sizeof(cur->ext.helper));
	if (a & FLOW_A_LABELS) {
		cur->labels.words = m->labels.words;
		memcpy(cur->labels.w, m->labels.w, m->labels.words * sizeof(cur->labels.w[0]));
	} else if (a & FLOW_A_LABELS_GONE) {
		cur->labels.words = 0;
		cur->flow.attrs &= ~FLOW_A_LABELS;
	}
	cur->flow.attrs |= a & ~FLOW_A_LABELS_GONE;
	flow_full_normalize(cur);
}

static void apply(struct old147 *o, uint8_t type, const struct flow_full *f)
{
	uint32_t now_s = (uint32_t)(o->now / 1000), h = flow_table_lookup(o->external, &f->flow.orig);

	switch (type) {
	case WIRE_T_CT_DEL:
		if (h)
			flow_table_delete(o->external, h);
		return;
	case WIRE_T_CT_UPD:
		if (h && !o->cfg.upd_replaces) {
			memset(&o->cur, 0, sizeof(o->cur));
			flow_table_export(o->external, h, &o->cur);
			lay_over(&o->cur, f);
			if (flow_table_upsert(o->external, &o->cur, now_s, &h) >= 0)
				*(uint32_t *)flow_table_user(o->external, h) = o->tag;
			return;
		}
		/* update or create */
		__attribute__((fallthrough));
	default:
		if (flow_table_upsert(o->external, f, now_s, &h) >= 0)
			*(uint32_t *)flow_table_user(o->external, h) = o->tag;
	}
}

/* protocol.md §3.4 "Digest of control messages": ACK releases, NACK moves back to the tx queue. */
static void rs_range(struct old147 *o, uint32_t from, uint32_t to, bool ack)
{
	uint32_t i = o->rs.head, found = 0;

	while (i) {
		uint32_t next = o->pool[i].next, s = o->pool[i].seq;

		if (before(to, s))
			break;          /* iteration stops at the first seq after `to` */
		if (!before(s, from)) {
			found++;
			if (ack) {
				node_release(o, i);
			} else {
				q_unlink(o, i);
				q_append(o, Q_TX, i);
			}
		}
		i = next;
	}
	if (!ack && found < to - from + 1)
		o->st.nack_unknown += to - from + 1 - found;
	say(o, "%s [%u, %u]: %u found in the rsqueue (%u long, head seq %u)", ack ? "ACK" : "NACK",
	     from, to, found, o->rs.len, o->rs.head ? o->pool[o->rs.head].seq : 0);
}

static void resync_all(struct old147 *o)
{
	uint32_t cursor = 0, h;

	/*
	 * protocol.md §3.4: every object of the internal cache.  Silent on dead objects
	 * waiting for their DEL's ACK: they are objects of the cache, so their
	 * DEL goes again.
	 */
	while ((h = flow_table_next(o->internal, &cursor)) != 0)
		enqueue_obj(o, h);
}

enum digest { D_DATA, D_CTL, D_BAD };

static enum digest digest(struct old147 *o, const struct wire_msg *m)
{
	const struct wire_hdr *h = &m->hdr;
	enum wire_reason r;

	switch (m->kind) {
	case WIRE_K_DATA:
		if (!wire_type_is_ct(h->type))
			return D_DATA;          /* expectations: none in the simulation */
		memset(&o->scratch, 0, sizeof(o->scratch));
		r = wire_ct_decode(m->data, m->len, &o->scratch);
		/*
		 * protocol.md §2.11 step 7: a malformed payload is dropped, its seq accepted.
		 * (1.4.7 accepts a few states our decoder refuses, wire.h's
		 * "strictness"; nothing in the simulation makes one.)
		 */
		if (r == WIRE_OK) {
			o->st.data_recv++;
			apply(o, h->type, &o->scratch);
		}
		return D_DATA;
	case WIRE_K_ACK:
		if (before(h->to, h->from))
			return D_BAD;
		o->st.ack_recv++;
		rs_range(o, h->from, h->to, true);
		return D_CTL;
	case WIRE_K_NACK:
		if (before(h->to, h->from))
			return D_BAD;
		o->st.nack_recv++;
		rs_range(o, h->from, h->to, false);
		return D_CTL;
	case WIRE_K_RESYNC:
		o->st.resync_recv++;
		resync_all(o);
		return D_CTL;
	case WIRE_K_ALIVE:
		return D_CTL;
	case WIRE_K_BAD:
		break;
	}
	return D_BAD;
}

static void flush_rsqueue(struct old147 *o)
{
	if (o->rs.len)
		say(o, "HELLO: rsqueue flushed, %u elements", o->rs.len);
	while (o->rs.head) {
		if (o->pool[o->rs.head].handle) {
			o->st.rsq_flushed_data++;
			mark_lost(o, o->rs.head);
		}
		else
			o->st.rsq_flushed_ctl++;
		node_release(o, o->rs.head);
	}
}

static void receive_msg(struct old147 *o, const struct wire_msg *m)
{
	const struct wire_hdr *h = &m->hdr;
	uint32_t seq = h->seq, expected = o->last_seq + 1;
	bool hello = false;

	/* protocol.md §2.11 step 5: a foreign version is skipped before sequence tracking. */
	if (m->reason != WIRE_OK)
		return;
	/* protocol.md §3.6 */
	if (h->flags & WIRE_F_HELLO) {
		o->st.hello_recv++;
		o->hello_back_pending = true;
		if (o->ack_pending && before(seq, o->ack_from)) {
			o->window = (int64_t)window_size(o) - 1;
			o->ack_from = seq;
		}
		flush_rsqueue(o);       /* the peer restarted and knows nothing */
		hello = true;
		if (o->recv_init && before(seq, expected))
			say(o, "HELLO seq %u before expected %u: taken in sync", seq, expected);
	}
	/* protocol.md §3.6 */
	if ((h->flags & WIRE_F_HELLO_BACK) && o->hello_phase)
		o->hello_phase = false;
	/* protocol.md §3.4.2 */
	if (!o->recv_init || hello || seq == expected) {
		if (digest(o, m) == D_BAD)
			return;
		if (!o->ack_pending) {
			o->ack_from = seq;
			o->ack_pending = true;
		}
		/*
		 * "when it hits 0".  Silent on ACKWindowSize 1 after a gap, which
		 * leaves the window at 0: taken literally, it never hits 0 again
		 * and only the timer and the next gap ACK.
		 */
		if (--o->window == 0) {
			enqueue_ctl(o, WIRE_F_ACK, o->ack_from, seq);
			o->window = window_size(o);
			o->ack_pending = false;
		}
	} else if (before(expected, seq)) {
		if (digest(o, m) == D_BAD)
			return;
		o->st.gaps++;
		if (o->ack_pending)
			enqueue_ctl(o, WIRE_F_ACK, o->ack_from, expected - 1);
		enqueue_ctl(o, WIRE_F_NACK, expected, seq - 1);
		o->window = (int64_t)window_size(o) - 1;
		o->ack_from = seq;
		o->ack_pending = true;
	} else {
		o->st.dropped_before++;
		return;                 /* before expected: dropped, nothing sent */
	}
	/* protocol.md §3.4.2 */
	o->last_seq = seq;
	o->recv_init = true;
}

void old147_receive(struct old147 *o, const void *data, size_t len, uint64_t now)
{
	struct wire_split s;
	struct wire_msg m;

	o->now = now;
	wire_split_init(&s, data, len, false);
	while (wire_split_next(&s, &m) == WIRE_SPLIT_MSG)
		receive_msg(o, &m);
}

/* ---- state ---------------------------------------------------------------------------- */

bool old147_idle(const struct old147 *o)
{
	return !o->tx.len;
}

bool old147_hello_phase(const struct old147 *o)
{
	return o->hello_phase;
}

uint32_t old147_rsq_len(const struct old147 *o)
{
	return o->rs.len;
}

struct flow_table *old147_internal(struct old147 *o)
{
	return o->internal;
}

struct flow_table *old147_external(struct old147 *o)
{
	return o->external;
}

enum old147_unrepaired old147_unrepaired(struct old147 *o, const struct flow_tuple *key,
					  uint32_t *seq)
{
	uint32_t h = flow_table_lookup(o->internal, key), i, lh = flow_table_lookup(o->lost, key);

	if (lh) {
		*seq = *(const uint32_t *)flow_table_user(o->lost, lh);
		return OLD147_DROPPED;
	}
	if (!h)
		return OLD147_REPAIRED;
	i = *obj_slot(o, h);
	if (i && o->pool[i].where == Q_RS) {
		*seq = o->pool[i].seq;
		return OLD147_NOT_NACKED;
	}
	if (i && o->pool[i].where == Q_TX)
		return OLD147_QUEUED;
	return OLD147_REPAIRED;
}

void old147_set_tag(struct old147 *o, uint32_t tag)
{
	o->tag = tag;
}

void old147_stats(const struct old147 *o, struct old147_stats *out)
{
	*out = o->st;
}
