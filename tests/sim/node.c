/*
 * node.c - one simulated ctsyncd (see node.h).
 */
#include "node.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/wire.h"

void world_fail(struct world *w, const char *fmt, ...)
{
	va_list ap;

	if (w->failed)
		return;
	w->failed = true;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, ap);
	va_end(ap);
}

static void *xcalloc(size_t n, size_t size);

/* ---- sets of (generations, sequence number) of the model's messages ---------------------- */

static size_t seqset_slot(const struct seqset *z, uint64_t v)
{
	return (size_t)(rng_mix(v) & (z->cap - 1));
}

static bool seqset_has(const struct seqset *z, uint32_t gen, uint32_t seq)
{
	uint64_t v = ((uint64_t)gen << 32 | seq) + 1;

	if (!z->cap)
		return false;
	for (size_t i = seqset_slot(z, v); z->v[i]; i = (i + 1) & (z->cap - 1))
		if (z->v[i] == v)
			return true;
	return false;
}

static void seqset_put(struct seqset *z, uint64_t v)
{
	size_t i;

	for (i = seqset_slot(z, v); z->v[i]; i = (i + 1) & (z->cap - 1))
		if (z->v[i] == v)
			return;
	z->v[i] = v;
	z->n++;
}

static void seqset_add(struct seqset *z, uint32_t gen, uint32_t seq)
{
	if (2 * (z->n + 1) > z->cap) {
		uint64_t *old = z->v;
		size_t cap = z->cap;

		z->cap = cap ? 2 * cap : 4096;
		z->v = xcalloc(z->cap, sizeof(*z->v));
		z->n = 0;
		for (size_t j = 0; j < cap; j++)
			if (old[j])
				seqset_put(z, old[j]);
		free(old);
	}
	seqset_put(z, ((uint64_t)gen << 32 | seq) + 1);
}

void world_free_delivered(struct world *w)
{
	free(w->accepted.v);
	free(w->wrong_old.v);
	memset(&w->accepted, 0, sizeof(w->accepted));
	memset(&w->wrong_old, 0, sizeof(w->wrong_old));
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		perror("sim");
		exit(2);
	}
	return p;
}

/*
 * SIM_TRACE_KEY=<source address>: log what happens to the flows with that
 * original source address (kernel changes, and the messages the 1.4.7
 * model receives about them).
 */
static bool traced(const struct flow_tuple *t)
{
	static const char *want;
	static bool init;
	char a[INET6_ADDRSTRLEN];

	if (!init) {
		want = getenv("SIM_TRACE_KEY");
		init = true;
	}
	if (!want)
		return false;
	inet_ntop(t->family, t->src.bytes, a, sizeof(a));
	return !strcmp(a, want);
}

static void trace_flow(const struct node *n, const char *what, const struct flow_full *ff)
{
	fprintf(stderr, "%8llu node %u: %s: attrs 0x%x mark %u timeout %u status 0x%x\n",
		(unsigned long long)n->w->now, n->id, what, ff->flow.attrs, ff->flow.mark,
		ff->flow.timeout, ff->flow.status);
}

static struct flow_table *table_new(uint32_t user_bytes, uint32_t seed)
{
	struct flow_table_options o = { .buckets = 64, .seed = seed, .user_bytes = user_bytes };
	struct flow_table *t;

	if (flow_table_new(&o, &t) < 0) {
		perror("sim: flow_table_new");
		exit(2);
	}
	return t;
}

/* ---- flows --------------------------------------------------------------------------- */

static void key_of(const struct node *n, uint32_t k, struct rng *r, struct flow_tuple *t)
{
	bool v6 = rng_chance(r, 0.2);

	memset(t, 0, sizeof(*t));
	t->family = v6 ? AF_INET6 : AF_INET;
	if (v6) {
		t->src.bytes[0] = 0x20;
		t->src.bytes[1] = 0x01;
		t->src.bytes[2] = 0x0d;
		t->src.bytes[3] = 0xb8;
		t->src.bytes[5] = (uint8_t)n->id;
		t->src.v6[3] = htonl(k);
		t->dst.bytes[0] = 0xfd;
		t->dst.bytes[15] = (uint8_t)rng_range(r, 1, 200);
	} else {
		/* 10.<node>.<k>: the key says whose flow it is. */
		t->src.v4 = htonl(0x0a000000u | (n->id << 20) | (k & 0xfffff));
		t->dst.v4 = htonl(0xc0a80000u | rng_range(r, 1, 254));
	}
}

/* A state of a random protocol with a random set of attributes, all of which round-trip. */
static void gen_flow(struct node *n, const struct flow_tuple *key, struct rng *r,
		     struct flow_full *ff)
{
	struct flow *f = &ff->flow;
	bool v6 = key->family == AF_INET6;
	uint32_t p = rng_below(r, 20);

	memset(ff, 0, sizeof(*ff));
	f->orig = *key;
	f->orig.l4.raw = 0;
	if (!key->l4proto) {
		f->orig.l4proto = p < 10 ? IPPROTO_TCP : p < 15 ? IPPROTO_UDP : p < 17 ?
			(v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP) : p < 19 ? IPPROTO_SCTP : IPPROTO_DCCP;
		f->orig.zone = rng_chance(r, 0.3) ? (uint16_t)rng_below(r, 4) : 0;
	} else {
		f->orig.l4 = key->l4;
	}
	switch (f->orig.l4proto) {
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (!key->l4proto) {
			f->orig.l4.icmp.type = v6 ? 128 : 8;
			f->orig.l4.icmp.id = (uint16_t)rng_u32(r);
		}
		f->attrs |= FLOW_A_ICMP;
		break;
	default:
		if (!key->l4proto) {
			f->orig.l4.port.sport = htons((uint16_t)rng_range(r, 1024, 65535));
			f->orig.l4.port.dport = htons((uint16_t)rng_range(r, 1, 1023));
		}
		f->attrs |= FLOW_A_PORTS;
		break;
	}
	f->status = 0x8 | (rng_u32(r) & 0x6);
	f->timeout = rng_range(r, 1, 432000);
	f->attrs |= FLOW_A_STATUS | FLOW_A_TIMEOUT;
	if (rng_chance(r, 0.7)) {
		f->mark = rng_u32(r);
		f->attrs |= FLOW_A_MARK;
	}
	if (f->orig.zone || rng_chance(r, 0.2))
		f->attrs |= FLOW_A_ZONE;
	/* Zero synproxy values are not sent (ct_encode.c), so only values round-trip. */
	if (rng_chance(r, 0.2)) {
		for (int i = 0; i < 3; i++)
			ff->ext.synproxy[i] = rng_u32(r);
		ff->ext.synproxy[0] |= 1;
		f->attrs |= FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT;
	}
	switch (f->orig.l4proto) {
	case IPPROTO_TCP:
		f->proto_state = (uint8_t)rng_range(r, 1, 9);
		f->attrs |= FLOW_A_PROTO_STATE;
		if ((n->w->enc_opts & WIRE_ENC_WSCALE) && rng_chance(r, 0.5)) {
			f->wscale_orig = (uint8_t)rng_below(r, 15);
			f->wscale_repl = (uint8_t)rng_below(r, 15);
			f->attrs |= FLOW_A_WSCALE;
		}
		break;
	case IPPROTO_SCTP:
		f->proto_state = (uint8_t)rng_range(r, 1, 7);
		f->attrs |= FLOW_A_PROTO_STATE;
		if (rng_chance(r, 0.5)) {
			ff->ext.sctp_vtag_orig = rng_u32(r);
			ff->ext.sctp_vtag_repl = rng_u32(r);
			f->attrs |= FLOW_A_SCTP_VTAGS;
		}
		break;
	case IPPROTO_DCCP:
		f->proto_state = (uint8_t)rng_range(r, 1, 8);
		f->dccp_role = (uint8_t)rng_below(r, 2);
		f->attrs |= FLOW_A_PROTO_STATE | FLOW_A_DCCP_ROLE;
		break;
	}
	if (rng_chance(r, 0.2)) {
		/* SNAT, with the port for port protocols. */
		if (v6) {
			ff->ext.snat.bytes[0] = 0x20;
			ff->ext.snat.bytes[15] = (uint8_t)rng_range(r, 1, 255);
		} else {
			ff->ext.snat.v4 = htonl(0xcb007100u | rng_range(r, 1, 254));
		}
		f->attrs |= FLOW_A_SNAT;
		if (f->attrs & FLOW_A_PORTS) {
			ff->ext.spat = htons((uint16_t)rng_range(r, 1024, 65535));
			f->attrs |= FLOW_A_SPAT;
		}
	}
	if (rng_chance(r, 0.1)) {
		ff->labels.words = (uint16_t)rng_range(r, 1, 3);
		for (unsigned i = 0; i < ff->labels.words; i++)
			ff->labels.w[i] = rng_u32(r);
		ff->labels.w[ff->labels.words - 1] |= 1;
		f->attrs |= FLOW_A_LABELS;
	}
	if (rng_chance(r, 0.05)) {
		strcpy(ff->ext.helper, "ftp");
		f->attrs |= FLOW_A_HELPER;
	}
	flow_full_normalize(ff);
}

/*
 * FLOW_A_LABELS_GONE is a note of the internal table (the daemon's
 * src/cache/local.c) and of the decoder, not part of the state: not compared.
 */
static bool full_equal(const struct flow_full *a, const struct flow_full *b)
{
	struct flow fa = a->flow, fb = b->flow;

	fa.attrs &= ~FLOW_A_LABELS_GONE;
	fb.attrs &= ~FLOW_A_LABELS_GONE;
	return !memcmp(&fa, &fb, sizeof(fa)) &&
	       !memcmp(&a->ext, &b->ext, sizeof(a->ext)) &&
	       a->labels.words == b->labels.words &&
	       !memcmp(a->labels.w, b->labels.w, a->labels.words * sizeof(a->labels.w[0]));
}

/* The simulation compares tables exactly, so every state it makes must survive the codec. */
static void check_roundtrip(struct node *n, const struct flow_full *ff)
{
	static uint8_t buf[WIRE_CT_MAX_LEN];
	static struct flow_full out;
	struct wire_hdr h = { .type = WIRE_T_CT_NEW };
	enum wire_reason r;
	int len;

	if (n->w->no_roundtrip_check)
		return;
	len = wire_ct_encode(buf, sizeof(buf), &h, ff, n->w->enc_opts, NULL);
	if (len < 0) {
		world_fail(n->w, "generated flow does not encode: %d", len);
		return;
	}
	memset(&out, 0, sizeof(out));
	r = wire_ct_decode(buf, (size_t)len, &out);
	if (r != WIRE_OK || !full_equal(ff, &out))
		world_fail(n->w, "generated flow does not round-trip (%s, attrs 0x%x)",
			   wire_reason_name(r), ff->flow.attrs);
}

/* ---- the kernel -------------------------------------------------------------------------- */

static uint32_t *live_slot(struct node *n, uint32_t kh)
{
	return flow_table_user(n->kernel, kh);
}

static void live_add(struct node *n, uint32_t kh)
{
	if (n->nlive == n->live_cap) {
		n->live_cap = n->live_cap ? 2 * n->live_cap : 256;
		n->live = realloc(n->live, n->live_cap * sizeof(*n->live));
		if (!n->live) {
			perror("sim");
			exit(2);
		}
	}
	*live_slot(n, kh) = n->nlive;
	n->live[n->nlive++] = kh;
}

static void live_remove(struct node *n, uint32_t kh)
{
	uint32_t i = *live_slot(n, kh), last = n->live[--n->nlive];

	n->live[i] = last;
	*live_slot(n, last) = i;
}

/* The daemon sees the kernel's change as an event: internal table, then the engine. */
static void mirror_upsert(struct node *n, const struct flow_full *ff, uint64_t now)
{
	uint32_t h;
	int ret;

	if (!n->up)
		return;
	if (n->old) {
		old147_flow_update(n->o, ff, now);
		n->dirty = true;
		return;
	}
	/*
	 * As the daemon's src/cache/local.c: a whole state without the labels its
	 * entry had is stored with FLOW_A_LABELS_GONE, so that the encoder
	 * sends an all-zero label array and a peer that lays updates over
	 * what it has (1.4.7) drops its labels too.
	 */
	h = flow_table_lookup(n->internal, &ff->flow.orig);
	if (h && !(flow_table_flags(n->internal, h) & FLOW_ENTRY_DEAD) &&
	    !(ff->flow.attrs & FLOW_A_LABELS) &&
	    (flow_table_flow(n->internal, h)->attrs & (FLOW_A_LABELS | FLOW_A_LABELS_GONE))) {
		static struct flow_full gone;

		gone = *ff;
		gone.flow.attrs |= FLOW_A_LABELS_GONE;
		ff = &gone;
	}
	ret = flow_table_upsert(n->internal, ff, (uint32_t)(now / 1000), &h);
	if (ret < 0) {
		world_fail(n->w, "node %u: internal upsert: %d", n->id, ret);
		return;
	}
	if (ftfw_flow_changed(n->e, h) < 0)
		world_fail(n->w, "node %u: ftfw_flow_changed refused a handle", n->id);
	n->dirty = true;
}

static void mirror_delete(struct node *n, const struct flow_tuple *key, uint64_t now)
{
	uint32_t h;

	if (!n->up)
		return;
	if (n->old) {
		old147_flow_delete(n->o, key, now);
		n->dirty = true;
		return;
	}
	h = flow_table_lookup(n->internal, key);
	if (!h || (flow_table_flags(n->internal, h) & FLOW_ENTRY_DEAD)) {
		world_fail(n->w, "node %u: deleted flow not live in the internal table", n->id);
		return;
	}
	flow_table_mark_dead(n->internal, h, (uint32_t)(now / 1000));
	ftfw_flow_changed(n->e, h);
	n->dirty = true;
}

static void kernel_insert(struct node *n, const struct flow_full *ff, uint64_t now)
{
	uint32_t kh;
	int ret;

	check_roundtrip(n, ff);
	if (traced(&ff->flow.orig))
		trace_flow(n, "kernel insert", ff);
	ret = flow_table_upsert(n->kernel, ff, (uint32_t)(now / 1000), &kh);
	if (ret != FLOW_UPSERT_INSERTED) {
		world_fail(n->w, "node %u: kernel insert: %d", n->id, ret);
		return;
	}
	live_add(n, kh);
	if (n->up && n->seen) {
		uint32_t sh;

		flow_table_upsert(n->seen, ff, 0, &sh);
	}
	mirror_upsert(n, ff, now);
	n->churn++;
}

void node_churn_create(struct node *n, uint64_t now)
{
	static struct flow_full ff;
	struct flow_tuple key;

	key_of(n, n->next_key++, &n->w->rng, &key);
	gen_flow(n, &key, &n->w->rng, &ff);
	kernel_insert(n, &ff, now);
}

void node_churn_recreate(struct node *n, uint64_t now)
{
	static struct flow_full ff;
	struct flow_tuple key;
	uint32_t lim = n->ndeleted < SIM_DELETED_RING ? n->ndeleted : SIM_DELETED_RING;

	if (!lim) {
		node_churn_create(n, now);
		return;
	}
	key = n->deleted[rng_below(&n->w->rng, lim)];
	if (flow_table_lookup(n->kernel, &key)) {
		node_churn_update(n, now);
		return;
	}
	gen_flow(n, &key, &n->w->rng, &ff);
	kernel_insert(n, &ff, now);
}

void node_churn_update(struct node *n, uint64_t now)
{
	static struct flow_full ff;
	struct rng *r = &n->w->rng;
	uint32_t kh;

	if (!n->nlive) {
		node_churn_create(n, now);
		return;
	}
	kh = n->live[rng_below(r, n->nlive)];
	flow_table_export(n->kernel, kh, &ff);
	switch (rng_below(r, 4)) {
	case 0:
		ff.flow.mark = rng_u32(r);
		ff.flow.attrs |= FLOW_A_MARK;
		break;
	case 1:
		ff.flow.timeout = rng_range(r, 1, 432000);
		break;
	case 2:
		ff.flow.status ^= 0x4;
		if (ff.flow.attrs & FLOW_A_PROTO_STATE)
			ff.flow.proto_state = (uint8_t)rng_range(r, 1, 5);
		break;
	default:
		if (ff.flow.attrs & FLOW_A_LABELS) {
			ff.flow.attrs &= ~FLOW_A_LABELS;
			ff.labels.words = 0;
		} else {
			ff.labels.words = 1;
			ff.labels.w[0] = rng_u32(r) | 2;
			ff.flow.attrs |= FLOW_A_LABELS;
		}
		break;
	}
	flow_full_normalize(&ff);
	check_roundtrip(n, &ff);
	if (traced(&ff.flow.orig))
		trace_flow(n, "kernel update", &ff);
	if (flow_table_upsert(n->kernel, &ff, (uint32_t)(now / 1000), &kh) < 0) {
		world_fail(n->w, "node %u: kernel update", n->id);
		return;
	}
	mirror_upsert(n, &ff, now);
	n->churn++;
}

void node_churn_delete(struct node *n, uint64_t now)
{
	struct flow_tuple key;
	uint32_t kh;

	if (!n->nlive)
		return;
	kh = n->live[rng_below(&n->w->rng, n->nlive)];
	key = flow_table_flow(n->kernel, kh)->orig;
	if (traced(&key))
		fprintf(stderr, "%8llu node %u: kernel delete\n", (unsigned long long)now, n->id);
	live_remove(n, kh);
	flow_table_delete(n->kernel, kh);
	n->deleted[n->ndeleted++ % SIM_DELETED_RING] = key;
	mirror_delete(n, &key, now);
	n->churn++;
}

/* ---- the daemon -------------------------------------------------------------------------- */

static void flush(struct node *n, uint64_t now)
{
	if (!n->used)
		return;
	channel_send(&n->w->ch, n->id, n->buf, n->used, now);
	n->used = 0;
}

static void trace_msg(struct node *n, const char *who, const void *msg, size_t len)
{
	static struct flow_full ff;
	struct wire_split sp;
	struct wire_msg m1;

	wire_split_init(&sp, msg, len, false);
	while (wire_split_next(&sp, &m1) == WIRE_SPLIT_MSG) {
		char what[96];

		if (m1.kind != WIRE_K_DATA) {
			if (getenv("SIM_TRACE_OLD"))
				fprintf(stderr, "%8llu node %u: %s %s seq %u flags 0x%x [%u, %u]\n",
					(unsigned long long)n->w->now, n->id, who,
					wire_kind_name(m1.kind), m1.hdr.seq, m1.hdr.flags, m1.hdr.from,
					m1.hdr.to);
			continue;
		}
		if (wire_ct_decode(m1.data, m1.len, &ff) != WIRE_OK || !traced(&ff.flow.orig))
			continue;
		snprintf(what, sizeof(what), "%s %s seq %u flags 0x%x", who,
			 wire_type_name(m1.hdr.type), m1.hdr.seq, m1.hdr.flags);
		trace_flow(n, what, &ff);
	}
}

static void cb_emit(void *arg, const void *msg, size_t len)
{
	struct node *n = arg;

	if (getenv("SIM_TRACE_KEY"))
		trace_msg(n, n->old ? "1.4.7 sends" : "ctsyncd sends", msg, len);

	/* protocol.md §5.1: appended while used + len < size, else the buffer goes first. */
	if (n->used && n->used + len >= n->cap)
		flush(n, n->w->now);
	memcpy(n->buf + n->used, msg, len);
	n->used += len;
	if (n->used >= n->cap)
		flush(n, n->w->now);    /* a message larger than a datagram goes alone */
}

static void cb_apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct node *n = arg;
	struct flow_table *t;
	uint32_t h;

	if (peer >= n->w->n || peer == n->id || !n->ext[peer]) {
		world_fail(n->w, "node %u: state from unknown peer %u", n->id, peer);
		return;
	}
	t = n->ext[peer];
	if (getenv("SIM_TRACE_KEY")) {
		char what[64];

		snprintf(what, sizeof(what), "applies %s of node %u", wire_type_name(type), peer);
		trace_flow(n, what, f);
	}
	if (type == WIRE_T_CT_DEL) {
		h = flow_table_lookup(t, &f->flow.orig);
		if (h)
			flow_table_delete(t, h);
		return;
	}
	/* NEW replaces, UPD updates or creates: our messages carry whole states, so both upsert. */
	n->data_from[peer]++;
	if (flow_table_upsert(t, f, (uint32_t)(n->w->now / 1000), &h) < 0) {
		world_fail(n->w, "node %u: external upsert failed", n->id);
		return;
	}
	memcpy(flow_table_user(t, h), &n->ext_gen[peer], sizeof(uint32_t));
}

static void cb_prefetch(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct node *n = arg;

	(void)type;
	if (peer < n->w->n && n->ext[peer])
		flow_table_prefetch(n->ext[peer], flow_table_hash(n->ext[peer], &f->flow.orig));
}

static void cb_dead_acked(void *arg, uint32_t h)
{
	struct node *n = arg;

	if (flow_table_delete(n->internal, h) < 0)
		world_fail(n->w, "node %u: dead_acked for unknown handle %u", n->id, h);
}

static void cb_peer_event(void *arg, unsigned peer, enum ftfw_peer_event ev)
{
	struct node *n = arg;

	if (n->w->trace) {
		static const char *const names[] = { "new", "restarted", "lost", "back", "two spaces" };

		fprintf(stderr, "%8llu node %u: peer %u %s\n", (unsigned long long)n->w->now, n->id,
			peer, names[ev]);
	}
	if (ev == FTFW_PEER_RESTARTED && peer < n->w->n && n->w->nodes[peer].old)
		n->w->old_restarts_seen++;
}

/*
 * The peer's daemon restarted: what it had not told us (DELs lost with its
 * dead entries) is gone from it.  Its states have a table of their own
 * here, flushed whatever the link; the engine then asks for them again and
 * sends ours unasked, as in the daemon (sync.h, FTFW_PEER_RESTARTED).  The
 * daemon marks and sweeps instead of flushing (src/cache/remote.c); after
 * quiescence both end with the peer's table, which is what is compared.
 */
static void cb_peer_reset(void *arg, unsigned peer)
{
	struct node *n = arg;

	if (n->w->trace)
		fprintf(stderr, "%8llu node %u: marks what it has of node %u\n",
			(unsigned long long)n->w->now, n->id, peer);
	if (peer >= n->w->n || !n->ext[peer])
		return;
	n->ext_gen[peer]++;
	n->ext_marked[peer] = true;
	n->marked_at[peer] = n->quiet_since[peer] = n->w->now;
	n->data_seen[peer] = n->data_from[peer];
}

/*
 * The daemon's sweep_due() (replication.c): our RESYNC request answered
 * and the peer quiet for 2 s, or 60 s after the mark; then what the peer
 * did not send again since the mark goes.
 */
static void sweep_external(struct node *n, uint64_t now)
{
	struct ftfw_stats st;

	ftfw_stats(n->e, &st);
	for (unsigned p = 0; p < n->w->n; p++) {
		uint32_t cursor = 0, h, gen;

		if (!n->ext_marked[p])
			continue;
		if (n->data_from[p] != n->data_seen[p]) {
			n->data_seen[p] = n->data_from[p];
			n->quiet_since[p] = now;
		}
		if (now - n->marked_at[p] < 60000 && (st.resync_outstanding || now - n->quiet_since[p] < 2000))
			continue;
		n->ext_marked[p] = false;
		while ((h = flow_table_next(n->ext[p], &cursor)) != 0) {
			memcpy(&gen, flow_table_user(n->ext[p], h), sizeof(gen));
			if (gen != n->ext_gen[p])
				flow_table_delete(n->ext[p], h);
		}
		if (n->w->trace)
			fprintf(stderr, "%8llu node %u: sweeps what node %u did not send again\n",
				(unsigned long long)now, n->id, p);
	}
}

/* The next time sweep_external() may have work: 2 s after the last state, or at the 60 s limit. */
static uint64_t sweep_deadline(const struct node *n, uint64_t now)
{
	uint64_t d = UINT64_MAX;

	for (unsigned p = 0; p < n->w->n; p++)
		if (n->ext_marked[p]) {
			uint64_t t = n->quiet_since[p] + 2000;

			if (t <= now)
				t = now + 100;  /* waiting for the RESYNC's answer: look again soon */
			d = d < t ? d : t;
		}
	return d;
}

static void cb_old_log(void *arg, const char *line)
{
	struct node *n = arg;

	fprintf(stderr, "%8llu node %u: 1.4.7: %s\n", (unsigned long long)n->w->now, n->id, line);
}

static const struct ftfw_ops node_ops = {
	.emit = cb_emit,
	.apply = cb_apply,
	.prefetch = cb_prefetch,
	.dead_acked = cb_dead_acked,
	.peer_event = cb_peer_event,
	.peer_reset = cb_peer_reset,
};

void node_init(struct world *w, struct node *n, unsigned id, const struct ftfw_config *cfg,
	       size_t mtu)
{
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->w = w;
	n->cfg = *cfg;
	n->kernel = table_new(8, rng_u32(&w->rng));
	n->cap = mtu - WIRE_UDP_OVERHEAD;
	n->buf = xcalloc(1, n->cap > FTFW_MSG_MAX ? n->cap : FTFW_MSG_MAX);
	n->budget = 16 * n->cap;
}

static void daemon_free(struct node *n)
{
	old147_free(n->o);
	n->o = NULL;
	ftfw_free(n->e);
	n->e = NULL;
	if (n->internal)
		flow_table_free(n->internal);
	n->internal = NULL;
	if (n->seen)
		flow_table_free(n->seen);
	n->seen = NULL;
	for (unsigned i = 0; i < SIM_NODES_MAX; i++) {
		if (n->ext[i])
			flow_table_free(n->ext[i]);
		n->ext[i] = NULL;
	}
}

void node_free(struct node *n)
{
	daemon_free(n);
	if (n->kernel)
		flow_table_free(n->kernel);
	free(n->live);
	free(n->buf);
	memset(n, 0, sizeof(*n));
}

void node_up(struct node *n, uint64_t now)
{
	static struct flow_full ff;
	uint32_t cursor = 0, kh, h, seq;
	int ret;

	if (n->old) {
		static struct old147_ops oops = { .emit = cb_emit };

		oops.log = getenv("SIM_TRACE_OLD") ? cb_old_log : NULL;

		n->w->ch.tag[n->id] = (uint32_t)n->restarts;
		for (unsigned i = 0; i < n->w->n; i++)
			if (n->restarts && i != n->id && n->w->nodes[i].up)
				n->w->old_restarts_while_up++;
		n->ocfg.clock_base = n->w->clock_base;
		n->ocfg.startup_resync = true;
		n->ocfg.upd_replaces = getenv("SIM_OLD_UPD_REPLACES") != NULL;
		n->ocfg.table_seed = rng_u32(&n->w->rng);
		if (old147_new(&n->ocfg, &oops, n, now, &n->o) < 0) {
			world_fail(n->w, "node %u: old147_new", n->id);
			return;
		}
		while ((kh = flow_table_next(n->kernel, &cursor)) != 0) {
			flow_table_export(n->kernel, kh, &ff);
			old147_load(n->o, &ff, now);
		}
		if (n->w->trace)
			fprintf(stderr, "%8llu node %u: up (1.4.7 model), %u flows\n",
				(unsigned long long)now, n->id, n->nlive);
		n->up = true;
		n->used = 0;
		n->dirty = true;
		n->wake = now;
		return;
	}
	n->w->ch.tag[n->id] = (uint32_t)n->restarts;
	n->internal = table_new(FTFW_USER_BYTES, rng_u32(&n->w->rng));
	/* The keys this process knew, for stale_excused(); its internal table forgets dead ones. */
	n->seen = table_new(0, 0x9e3779b9u ^ n->id);
	for (unsigned i = 0; i < n->w->n; i++)
		if (i != n->id)
			n->ext[i] = table_new(sizeof(uint32_t), rng_u32(&n->w->rng));
	memset(n->ext_marked, 0, sizeof(n->ext_marked));
	/* The startup dump: loaded, not sent (protocol.md §6.1); the peer's resync request fetches it. */
	while ((kh = flow_table_next(n->kernel, &cursor)) != 0) {
		flow_table_export(n->kernel, kh, &ff);
		flow_table_upsert(n->internal, &ff, (uint32_t)(now / 1000), &h);
		flow_table_upsert(n->seen, &ff, 0, &h);
	}
	/*
	 * A new counter for each run of the daemon: from a clock shared by
	 * the nodes (as the daemon does with time(NULL)) through
	 * ftfw_initial_seq(), or random.
	 */
	seq = n->w->time_seq ? ftfw_initial_seq(n->w->clock_base + (uint32_t)(now / 1000), n->id) :
			       rng_u32(&n->w->rng);
	ret = ftfw_new(&n->cfg, &node_ops, n, n->internal, seq, now, &n->e);
	if (ret < 0) {
		world_fail(n->w, "node %u: ftfw_new: %d", n->id, ret);
		return;
	}
	ftfw_request_resync(n->e);     /* StartupResync on */
	if (n->w->trace)
		fprintf(stderr, "%8llu node %u: up, seq %u, %u flows\n", (unsigned long long)now,
			n->id, seq, n->nlive);
	n->up = true;
	n->used = 0;
	n->dirty = true;
	n->wake = now;
	n->next_expire = now + 1000;
}

void node_down(struct node *n, uint64_t now, uint32_t down_ms)
{
	if (n->w->trace && n->old)
		fprintf(stderr, "%8llu node %u: down for %u ms (1.4.7 model)\n",
			(unsigned long long)now, n->id, down_ms);
	else if (n->w->trace) {
		struct ftfw_peer_stats ps;

		for (unsigned i = 0; i < n->w->n; i++)
			if (i != n->id && ftfw_peer_stats(n->e, i, &ps) == 0)
				fprintf(stderr, "%8llu node %u: down for %u ms, next seq %u, peer %u last %u%s\n",
					(unsigned long long)now, n->id, down_ms, ftfw_next_seq(n->e), i,
					ps.last_seq, ps.hello_pending ? " (hello pending)" : "");
	}
	daemon_free(n);
	n->up = false;
	n->used = 0;            /* what was not flushed dies with the process */
	n->up_at = now + down_ms;
	n->restarts++;
}

/*
 * From the 1.4.7 model: message by message (ftfw_receive_batch() is
 * the same as ftfw_receive() on each), to record for excused() which of
 * them the engine took, and which it dropped as old while it had taken
 * nothing later of that process: a drop protocol.md §3.4 does not explain (1.4.7
 * would have reset on the HELLO of a restarted peer).
 */
static void receive_from_old(struct node *n, const struct dgram *d, uint64_t now)
{
	struct world *w = n->w;
	uint32_t gen = d->tag << 16 | (uint32_t)n->restarts;
	struct wire_split s;
	struct wire_msg m;
	enum wire_split_status st;

	if (getenv("SIM_TRACE_KEY"))
		trace_msg(n, "ctsyncd receives", d->data, d->len);
	if (!w->acc_any || w->acc_gen != gen) {
		w->acc_any = false;
		w->acc_gen = gen;
	}
	wire_split_init(&s, d->data, d->len, false);
	while ((st = wire_split_next(&s, &m)) == WIRE_SPLIT_MSG) {
		struct ftfw_peer_stats before, after;

		ftfw_peer_stats(n->e, d->from, &before);
		ftfw_receive(n->e, d->from, &m, now);
		ftfw_peer_stats(n->e, d->from, &after);
		if (m.reason != WIRE_OK || m.kind == WIRE_K_BAD)
			continue;
		if (after.seq_before != before.seq_before) {
			if (!w->acc_any || (int32_t)(w->acc_max - m.hdr.seq) < 0)
				seqset_add(&w->wrong_old, gen, m.hdr.seq);
			continue;
		}
		seqset_add(&w->accepted, gen, m.hdr.seq);
		if (!w->acc_any || (int32_t)(m.hdr.seq - w->acc_max) > 0)
			w->acc_max = m.hdr.seq;
		w->acc_any = true;
	}
	if (st == WIRE_SPLIT_ERROR)
		ftfw_count_rejected(n->e, d->from, m.reason);
	if (getenv("SIM_TRACE_OLD")) {
		struct ftfw_peer_stats ps;

		ftfw_peer_stats(n->e, d->from, &ps);
		fprintf(stderr, "%8llu node %u: after a datagram of peer %u: last_seq %u, "
			"%llu old dropped, %llu restarts seen%s\n", (unsigned long long)now, n->id,
			d->from, ps.last_seq, (unsigned long long)ps.seq_before,
			(unsigned long long)ps.restarts, ps.in_hello ? ", it says HELLO" : "");
	}
	n->dirty = true;
}

/* As the daemon: the messages of a datagram go to the engine in runs, decoded ahead. */
void node_receive(struct node *n, const struct dgram *d, uint64_t now)
{
	struct wire_split s;
	struct wire_msg m[FTFW_RX_AHEAD];
	enum wire_split_status st = WIRE_SPLIT_MSG;

	if (n->old) {
		/* The sending process's generation (its node's restarts when it started). */
		old147_set_tag(n->o, d->tag);
		if (getenv("SIM_TRACE_KEY"))
			trace_msg(n, "1.4.7 receives", d->data, d->len);
		old147_receive(n->o, d->data, d->len, now);
		n->dirty = true;
		return;
	}
	if (n->w->nodes[d->from].old) {
		receive_from_old(n, d, now);
		return;
	}
	wire_split_init(&s, d->data, d->len, false);
	while (st == WIRE_SPLIT_MSG) {
		unsigned k = 0;

		while (k < FTFW_RX_AHEAD && (st = wire_split_next(&s, &m[k])) == WIRE_SPLIT_MSG)
			k++;
		ftfw_receive_batch(n->e, d->from, m, k, now);
		if (st == WIRE_SPLIT_ERROR)
			ftfw_count_rejected(n->e, d->from, m[k].reason);
	}
	n->dirty = true;
}

/* ALARM: external entries not refreshed for more than CacheTimeout leave (the daemon's rule). */
static void expire_external(struct node *n, uint64_t now)
{
	uint32_t now_s = (uint32_t)(now / 1000);

	for (unsigned i = 0; i < n->w->n; i++) {
		uint32_t cursor = 0, h;

		if (!n->ext[i])
			continue;
		while ((h = flow_table_next(n->ext[i], &cursor)) != 0)
			if (now_s - flow_table_updated(n->ext[i], h) > n->w->cache_timeout_s) {
				flow_table_delete(n->ext[i], h);
				n->w->expired++;
			}
	}
	n->next_expire = now + 1000;
}

void node_iterate(struct node *n, uint64_t now)
{
	uint64_t d;

	if (n->old) {
		old147_tick(n->o, now);
		old147_send(n->o, now);
		flush(n, now);
		n->wake = old147_send_ready(n->o) ? now + 1 : old147_deadline(n->o);
		n->dirty = false;
		return;
	}
	if (n->w->cache_timeout_s && now >= n->next_expire)
		expire_external(n, now);
	ftfw_tick(n->e, now);
	sweep_external(n, now);
	ftfw_send(n->e, now, n->budget);
	flush(n, now);
	d = ftfw_next_deadline(n->e);
	if (sweep_deadline(n, now) < d)
		d = sweep_deadline(n, now);
	if (n->w->cache_timeout_s && n->next_expire < d)
		d = n->next_expire;
	n->wake = ftfw_send_ready(n->e) ? now + 1 : d;
	n->dirty = false;
}

/* ---- the final comparison -------------------------------------------------------------- */

static const char *key_str(const struct flow_tuple *t, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(t->family, t->src.bytes, a, sizeof(a));
	snprintf(buf, len, "%s proto %u zone %u", a, t->l4proto, t->zone);
	return buf;
}

/* Every live entry of `truth` is in `t` with the same content, and t has nothing else live. */
/*
 * A mismatch the checks may excuse: MISSING (the truth has a key the
 * table lacks), DIFFERS, or EXTRA (the table has a key the truth lacks).
 */
enum mismatch { MISSING, DIFFERS, EXTRA };

struct excuse {
	const struct node *reader, *owner;
	uint64_t stale, dropped, not_nacked;
};

/*
 * ctsyncd -> 1.4.7.  A 1.4.7 reader keeps what a previous process of
 * the owner sent it: it never flushes its external cache for a restarted
 * peer (protocol.md §3.6 flushes only its resend queue; protocol.md §6.1), so the owner's
 * new process cannot remove a state it never knew (a flow deleted while
 * it was down, or whose DEL died with it).  Such an extra entry is
 * excused: written last by an earlier process of the owner, with a key
 * the current process never had.  Nothing else is.
 *
 * 1.4.7 -> ctsyncd.  1.4.7 has no retransmission timeout: what it sent
 * is repaired only if a NACK for it arrives while the state is still in
 * its rsqueue.  A mismatch is excused when the model says the key's
 * latest state left its rsqueue unacknowledged (full, or flushed by our
 * HELLO: protocol.md §3.2, §3.6), or sits there never NACKed (every NACK
 * ctsyncd sent for it was lost: 1.4.7's own receiver NACKs once).  A
 * key the model holds nothing pending for was acknowledged by ctsyncd:
 * a mismatch there is ctsyncd's.
 */
static bool excused(struct excuse *ex, const struct flow_table *t, const struct flow_tuple *key,
		    enum mismatch kind)
{
	if (!ex)
		return false;
	if (ex->reader->old) {
		uint32_t h = flow_table_lookup(t, key);
		const uint32_t *tag = h ? flow_table_user(t, h) : NULL;

		if (kind != EXTRA || !tag || *tag == (uint32_t)ex->owner->restarts ||
		    flow_table_lookup(ex->owner->seen, key))
			return false;
		ex->stale++;
		return true;
	}
	if (ex->owner->old) {
		uint32_t seq = 0;
		enum old147_unrepaired why = old147_unrepaired(ex->owner->o, key, &seq);

		uint32_t gen = (uint32_t)(ex->owner->restarts << 16 | ex->reader->restarts);

		/*
		 * Not if ctsyncd took that transmission (then it had the state),
		 * or dropped it as old against an earlier process's numbers.
		 */
		if (seqset_has(&ex->owner->w->accepted, gen, seq) ||
		    seqset_has(&ex->owner->w->wrong_old, gen, seq))
			return false;
		switch (why) {
		case OLD147_DROPPED:
			ex->dropped++;
			return true;
		case OLD147_NOT_NACKED:
			ex->not_nacked++;
			return true;
		default:
			return false;
		}
	}
	return false;
}

/* Every live entry of `truth` is in `t` with the same content, and t has nothing else live. */
static bool same_table(struct world *w, const struct flow_table *truth, const struct flow_table *t,
		       const char *what, struct excuse *ex)
{
	static struct flow_full a, b;
	uint32_t cursor = 0, h;
	char k[128];

	while ((h = flow_table_next(truth, &cursor)) != 0) {
		uint32_t th;

		if (flow_table_flags(truth, h) & FLOW_ENTRY_DEAD)
			continue;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		flow_table_export(truth, h, &a);
		th = flow_table_lookup(t, &a.flow.orig);
		if (!th || (flow_table_flags(t, th) & FLOW_ENTRY_DEAD)) {
			if (excused(ex, t, &a.flow.orig, MISSING))
				continue;
			world_fail(w, "%s: missing %s", what, key_str(&a.flow.orig, k, sizeof(k)));
			return false;
		}
		flow_table_export(t, th, &b);
		if (!full_equal(&a, &b)) {
			if (excused(ex, t, &a.flow.orig, DIFFERS))
				continue;
			world_fail(w, "%s: differs for %s (mark %u/%u, timeout %u/%u, attrs 0x%x/0x%x)",
				   what, key_str(&a.flow.orig, k, sizeof(k)), a.flow.mark, b.flow.mark,
				   a.flow.timeout, b.flow.timeout, a.flow.attrs, b.flow.attrs);
			return false;
		}
	}
	cursor = 0;
	while ((h = flow_table_next(t, &cursor)) != 0) {
		const struct flow_tuple *key = &flow_table_flow(t, h)->orig;
		uint32_t th;

		if (flow_table_flags(t, h) & FLOW_ENTRY_DEAD)
			continue;
		th = flow_table_lookup(truth, key);
		if (th && !(flow_table_flags(truth, th) & FLOW_ENTRY_DEAD))
			continue;
		if (excused(ex, t, key, EXTRA))
			continue;
		world_fail(w, "%s: stale %s", what, key_str(key, k, sizeof(k)));
		return false;
	}
	return true;
}

bool node_idle(const struct node *n)
{
	if (n->old)
		return old147_idle(n->o);
	for (unsigned p = 0; p < n->w->n; p++)
		if (n->ext_marked[p])
			return false;           /* a sweep is still due */
	return ftfw_idle(n->e);
}

bool node_check(struct node *reader, struct node *owner)
{
	struct flow_table *internal, *ext;
	char what[96];

	if (!reader->up || !owner->up) {
		world_fail(reader->w, "node down at the end");
		return false;
	}
	internal = owner->old ? old147_internal(owner->o) : owner->internal;
	ext = reader->old ? old147_external(reader->o) : reader->ext[owner->id];
	if (!owner->old && flow_table_count(owner->internal) != owner->nlive) {
		world_fail(reader->w, "node %u: internal table holds %u entries (dead ones left?), kernel %u",
			   owner->id, flow_table_count(owner->internal), owner->nlive);
		return false;
	}
	snprintf(what, sizeof(what), "node %u internal vs its kernel", owner->id);
	if (!same_table(reader->w, owner->kernel, internal, what, NULL))
		return false;
	snprintf(what, sizeof(what), "node %u external of node %u vs node %u's kernel", reader->id,
		 owner->id, owner->id);
	if (reader->old || owner->old) {
		struct excuse ex = { .reader = reader, .owner = owner };
		bool ok = same_table(reader->w, owner->kernel, ext, what, &ex);

		reader->w->stale_excused += ex.stale;
		reader->w->dropped_excused += ex.dropped;
		reader->w->not_nacked_excused += ex.not_nacked;
		return ok;
	}
	return same_table(reader->w, owner->kernel, ext, what, NULL);
}
