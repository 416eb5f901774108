/*
 * kernel-driver.c - drives the kernel module against the real kernel, on
 * the real loop, for tests/integration/kernel.sh (which runs it inside a
 * namespace of its own; never run it in a namespace you care about).
 *
 *   dump                 print every entry, one canonical line each (and
 *                        its sequence adjustment, master and labels, if any)
 *   events N SECS        print "ready", then N events (or until SECS)
 *   save FILE            dump into FILE (raw struct flow_full records)
 *   load FILE            create FILE's entries (unrelated first), report
 *   attrs                create entries with helper, master, labels, seq
 *                        adjustment, NAT, zone, mark; compare their dump
 *   bulk N               create / update / delete N entries through the
 *                        batched writer (errors-only and ACK modes), with
 *                        the event socket counting own writes; rates
 *   purge                selective flush (keep mark 1), then full flush
 *   slices N             dump N entries while a 1 ms timer ticks
 *   listen N SECS [MS]   count N events (another process makes them):
 *                        rate and CPU time per event; MS = coalesce_ms
 *   overrun              a 64 KiB event buffer and a burst: ENOBUFS is
 *                        reported and the buffer grows
 *   create N             create N entries (a producer for listen)
 *
 * Canonical line, the same as kernel.sh makes from conntrack -L -o extended:
 *   fam=ipv4 proto=6 state=ESTABLISHED src=.. dst=.. sport=.. dport=.. |
 *   src=.. dst=.. sport=.. dport=.. | assured=1 unreplied=0 mark=7 zone=0
 *   helper=- tmo=299
 * (ICMP tuples have type=, code=, id= instead of ports.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/netfilter/nf_conntrack_common.h>

#include "kernel/kernel.h"
#include "loop/log.h"
#include "loop/loop.h"

static struct loop *loop;
static int failures;

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); failures++; } while (0)

static void run_until(const bool *done, unsigned max_ms)
{
	uint64_t end = loop_now_ms(loop) + max_ms;

	while (!*done && loop_now_ms(loop) < end)
		if (loop_run_once(loop, 50) < 0)
			break;
}

/* ---- canonical lines --------------------------------------------------------------- */

static const char *tcp_states[] = { "NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
				    "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2" };
static const char *sctp_states[] = { "NONE", "CLOSED", "COOKIE_WAIT", "COOKIE_ECHOED", "ESTABLISHED",
				     "SHUTDOWN_SENT", "SHUTDOWN_RECD", "SHUTDOWN_ACK_SENT",
				     "HEARTBEAT_SENT", "HEARTBEAT_ACKED" };

static const char *state_name(const struct flow *f)
{
	if (!(f->attrs & FLOW_A_PROTO_STATE))
		return "-";
	if (f->orig.l4proto == IPPROTO_TCP && f->proto_state < 10)
		return tcp_states[f->proto_state];
	if (f->orig.l4proto == IPPROTO_SCTP && f->proto_state < 10)
		return sctp_states[f->proto_state];
	return "-";
}

static int icmp_answer(uint8_t proto, uint8_t type)
{
	static const uint8_t v4[][2] = { { 8, 0 }, { 0, 8 }, { 13, 14 }, { 14, 13 }, { 15, 16 }, { 16, 15 },
					 { 17, 18 }, { 18, 17 } };
	static const uint8_t v6[][2] = { { 128, 129 }, { 129, 128 }, { 139, 140 }, { 140, 139 } };

	if (proto == IPPROTO_ICMP) {
		for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++)
			if (v4[i][0] == type)
				return v4[i][1];
	} else {
		for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++)
			if (v6[i][0] == type)
				return v6[i][1];
	}
	return type;
}

static void put_tuple(char *out, size_t n, int family, const union flow_addr *s, const union flow_addr *d,
		      const struct flow *f, uint16_t sport, uint16_t dport, int icmp_type)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	size_t len;

	inet_ntop(family, s, a, sizeof(a));
	inet_ntop(family, d, b, sizeof(b));
	len = (size_t)snprintf(out, n, "src=%s dst=%s", a, b);
	if (f->attrs & FLOW_A_ICMP)
		snprintf(out + len, n - len, " type=%d code=%u id=%u", icmp_type, f->orig.l4.icmp.code,
			 ntohs(f->orig.l4.icmp.id));
	else if (f->attrs & FLOW_A_PORTS)
		snprintf(out + len, n - len, " sport=%u dport=%u", ntohs(sport), ntohs(dport));
}

static void canonical(const struct flow_full *ff, char *out, size_t n)
{
	const struct flow *f = &ff->flow;
	const struct flow_ext *x = &ff->ext;
	int fam = f->orig.family;
	char o[160], r[160];
	int rtype = (f->attrs & FLOW_A_ICMP) ? icmp_answer(f->orig.l4proto, f->orig.l4.icmp.type) : 0;

	put_tuple(o, sizeof(o), fam, &f->orig.src, &f->orig.dst, f, f->orig.l4.port.sport,
		  f->orig.l4.port.dport, f->orig.l4.icmp.type);
	put_tuple(r, sizeof(r), fam, (f->attrs & FLOW_A_DNAT) ? &x->dnat : &f->orig.dst,
		  (f->attrs & FLOW_A_SNAT) ? &x->snat : &f->orig.src, f,
		  (f->attrs & FLOW_A_DPAT) ? x->dpat : f->orig.l4.port.dport,
		  (f->attrs & FLOW_A_SPAT) ? x->spat : f->orig.l4.port.sport, rtype);
	snprintf(out, n, "fam=%s proto=%u state=%s %s | %s | assured=%d unreplied=%d mark=%u zone=%u helper=%s tmo=%u",
		 fam == AF_INET ? "ipv4" : "ipv6", f->orig.l4proto, state_name(f), o, r,
		 !!(f->status & IPS_ASSURED), !(f->status & IPS_SEEN_REPLY), f->mark, f->orig.zone,
		 (f->attrs & FLOW_A_HELPER) ? x->helper : "-", f->timeout);
}

/* ---- dump ---------------------------------------------------------------------------- */

struct dump_ctx {
	bool done;
	int err;
	uint64_t n;
	FILE *save;
	void (*each)(struct dump_ctx *c, const struct flow_full *ff);
	struct flow_full *keep;         /* attrs: the flows seen */
	size_t nkeep, capkeep;
	struct kernel_dump_stats st;
};

static void dump_on_flow(void *arg, const struct flow_full *ff)
{
	struct dump_ctx *c = arg;

	c->n++;
	if (c->each)
		c->each(c, ff);
}

static void dump_on_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct dump_ctx *c = arg;

	c->done = true;
	c->err = err;
	c->st = *st;
}

static int dump_with(struct dump_ctx *c, unsigned max_ms)
{
	static const struct kernel_dump_cb cb = { .on_flow = dump_on_flow, .on_done = dump_on_done };
	int err;

	c->done = false;
	c->n = 0;
	if (!kernel_dump_start(loop, AF_UNSPEC, 0, &cb, c, &err)) {
		FAIL("dump start: %s", strerror(-err));
		return err;
	}
	run_until(&c->done, max_ms);
	if (!c->done) {
		FAIL("dump did not finish in %u ms", max_ms);
		return -ETIMEDOUT;
	}
	if (c->err)
		FAIL("dump ended with %s", strerror(-c->err));
	return c->err;
}

static void print_each(struct dump_ctx *c, const struct flow_full *ff)
{
	const uint32_t *q = ff->ext.nat_seq;
	char line[512];

	(void)c;
	canonical(ff, line, sizeof(line));
	/* What conntrack -L cannot show (nat.sh and expect.sh compare them between kernels). */
	fputs(line, stdout);
	if (ff->flow.attrs & FLOW_A_NAT_SEQ)
		printf(" seqadj=%u,%u,%u/%u,%u,%u", q[0], q[1], q[2], q[3], q[4], q[5]);
	if (ff->flow.attrs & FLOW_A_MASTER) {
		char ms[INET6_ADDRSTRLEN], md[INET6_ADDRSTRLEN];

		inet_ntop(ff->ext.master.family, ff->ext.master.src.bytes, ms, sizeof(ms));
		inet_ntop(ff->ext.master.family, ff->ext.master.dst.bytes, md, sizeof(md));
		printf(" master=%s:%u-%s:%u", ms, ntohs(ff->ext.master.l4.port.sport), md,
		       ntohs(ff->ext.master.l4.port.dport));
	}
	if (ff->flow.attrs & FLOW_A_LABELS) {
		fputs(" labels=0x", stdout);
		for (unsigned i = ff->labels.words; i-- > 0;)
			printf("%08x", ff->labels.w[i]);
	}
	putchar('\n');
}

static int cmd_dump(void)
{
	struct dump_ctx c = { .each = print_each };

	dump_with(&c, 30000);
	fprintf(stderr, "dump: %" PRIu64 " entries, %" PRIu64 " malformed\n", c.n, c.st.malformed);
	return failures ? 1 : 0;
}

static void save_each(struct dump_ctx *c, const struct flow_full *ff)
{
	if (fwrite(ff, sizeof(*ff), 1, c->save) != 1)
		FAIL("write: %s", strerror(errno));
}

static int cmd_save(const char *path)
{
	struct dump_ctx c = { .each = save_each, .save = fopen(path, "wb") };

	if (!c.save) {
		FAIL("%s: %s", path, strerror(errno));
		return 1;
	}
	dump_with(&c, 30000);
	fclose(c.save);
	fprintf(stderr, "save: %" PRIu64 " entries\n", c.n);
	return failures ? 1 : 0;
}

static void collect_each(struct dump_ctx *c, const struct flow_full *ff)
{
	if (c->nkeep == c->capkeep) {
		c->capkeep = c->capkeep ? 2 * c->capkeep : 64;
		c->keep = realloc(c->keep, c->capkeep * sizeof(*c->keep));
		if (!c->keep)
			abort();
	}
	c->keep[c->nkeep++] = *ff;
}

/* ---- events ---------------------------------------------------------------------------- */

#define HINTS_MAX 256

struct ev_ctx {
	uint64_t n, own, limit;
	bool done, print;
	uint64_t first_us, last_us;
	unsigned overruns;
	/* prefetch hints not delivered yet, oldest first: each must be the next flow delivered */
	uint64_t hints, hint_head, hint_tail, hint_mismatch;
	struct flow_tuple hinted[HINTS_MAX];
};

static void ev_on_prefetch(void *arg, const struct flow_full *ff)
{
	struct ev_ctx *c = arg;

	c->hints++;
	if (c->hint_head - c->hint_tail < HINTS_MAX)
		c->hinted[c->hint_head++ % HINTS_MAX] = ff->flow.orig;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void ev_on_flow(void *arg, enum kernel_event ev, const struct flow_full *ff, unsigned origin)
{
	static const char *names[] = { "NEW", "UPDATE", "DESTROY" };
	struct ev_ctx *c = arg;
	bool own = (origin & KERNEL_ORIGIN_OWN) != 0;
	char line[512];

	if (c->hint_tail < c->hint_head &&
	    !flow_tuple_equal(&c->hinted[c->hint_tail++ % HINTS_MAX], &ff->flow.orig))
		c->hint_mismatch++;
	if (!c->n)
		c->first_us = now_us();
	c->last_us = now_us();
	c->n++;
	if (own)
		c->own++;
	if (c->print) {
		canonical(ff, line, sizeof(line));
		printf("%s own=%d %s\n", names[ev], own, line);
		fflush(stdout);
	}
	if (c->limit && c->n >= c->limit)
		c->done = true;
}

static void ev_on_overrun(void *arg, uint32_t rcvbuf)
{
	struct ev_ctx *c = arg;

	c->overruns++;
	fprintf(stderr, "events: overrun, receive buffer now %u\n", rcvbuf);
}

static int cmd_events(uint64_t n, unsigned secs)
{
	static const struct kernel_events_cb cb = { .on_flow = ev_on_flow, .on_overrun = ev_on_overrun };
	struct kernel_events_opts o = { .rcvbuf = 4u << 20, .rcvbuf_max = 16u << 20 };
	struct ev_ctx c = { .limit = n, .print = true };
	int err;
	struct kernel_events *ev = kernel_events_open(loop, &o, &cb, &c, &err);

	if (!ev) {
		FAIL("events open: %s", strerror(-err));
		return 1;
	}
	puts("ready");
	fflush(stdout);
	run_until(&c.done, secs * 1000);
	kernel_events_close(ev);
	return c.done ? 0 : 1;
}

/* ---- the writer -------------------------------------------------------------------------- */

struct job_ctx {
	struct flow_full *flows;
	size_t n, i;
	enum kernel_op op;
	uint32_t timeout;
	bool done;
	struct kernel_write_stats st;
	unsigned errors_seen;
	int last_err;
	bool related_pass;              /* load: unrelated first, then related */
	int pass;
	bool mark_bump;
};

static void on_error(void *arg, enum kernel_op op, uint64_t cookie, int err)
{
	struct job_ctx *c = arg;

	(void)op;
	(void)cookie;
	c->errors_seen++;
	c->last_err = err;
}

static bool job_next(void *arg, struct kernel_job_item *it)
{
	struct job_ctx *c = arg;

	if (c->related_pass) {
		/* Two passes over the array: without master, then with. */
		for (;;) {
			if (c->i == c->n) {
				if (c->pass == 1)
					return false;
				c->pass = 1;
				c->i = 0;
			}
			if (!!(c->flows[c->i].flow.attrs & FLOW_A_MASTER) == (c->pass == 1))
				break;
			c->i++;
		}
	} else if (c->i == c->n) {
		return false;
	}
	if (c->mark_bump) {
		c->flows[c->i].flow.mark++;
		c->flows[c->i].flow.attrs |= FLOW_A_MARK;
	}
	*it = (struct kernel_job_item){ .op = c->op, .ff = &c->flows[c->i], .timeout = c->timeout, .cookie = c->i };
	if (c->timeout == KERNEL_TIMEOUT_KEEP && c->op == KERNEL_OP_CREATE)
		it->timeout = c->flows[c->i].flow.timeout ? c->flows[c->i].flow.timeout : 60;
	c->i++;
	return true;
}

static void job_done(void *arg, const struct kernel_write_stats *st)
{
	struct job_ctx *c = arg;

	c->st = *st;
	c->done = true;
}

static int run_job(struct kernel_writer *w, struct job_ctx *c, enum kernel_op op, uint32_t timeout)
{
	int err;

	c->op = op;
	c->timeout = timeout;
	c->i = 0;
	c->pass = 0;
	c->done = false;
	c->errors_seen = 0;
	if ((err = kernel_writer_run(w, 0, job_next, job_done, c)) < 0) {
		FAIL("writer run: %s", strerror(-err));
		return err;
	}
	run_until(&c->done, 60000);
	if (!c->done) {
		FAIL("job did not finish");
		return -ETIMEDOUT;
	}
	return 0;
}

static void print_job(const char *what, const struct job_ctx *c)
{
	double secs = (double)c->st.elapsed_us / 1e6;

	printf("%-28s %7" PRIu64 " requests: ok %" PRIu64 " failed %" PRIu64 " in %.3f s = %.0f/s, %" PRIu64
	       " sendmsg\n", what, c->st.requests, c->st.ok, c->st.failed, secs,
	       secs > 0 ? (double)c->st.requests / secs : 0.0, c->st.batches);
	for (int e = 0; e < KERNEL_ERRNO_MAX; e++)
		if (c->st.by_errno[e])
			printf("    errno %d (%s): %u\n", e, strerror(e), c->st.by_errno[e]);
	fflush(stdout);
}

static struct kernel_writer *writer(unsigned build_opts, struct job_ctx *c)
{
	struct kernel_writer_opts o = { .build_opts = build_opts };
	struct kernel_writer_cb cb = { on_error };
	int err;
	struct kernel_writer *w = kernel_writer_new(loop, &o, &cb, c, &err);

	if (!w)
		FAIL("writer: %s", strerror(-err));
	return w;
}

static int cmd_load(const char *path, bool tracking)
{
	FILE *f = fopen(path, "rb");
	struct job_ctx c = { .related_pass = true };
	struct kernel_writer *w;
	size_t cap = 0;

	if (!f) {
		FAIL("%s: %s", path, strerror(errno));
		return 1;
	}
	for (;;) {
		if (c.n == cap) {
			cap = cap ? 2 * cap : 64;
			c.flows = realloc(c.flows, cap * sizeof(*c.flows));
			if (!c.flows)
				abort();
		}
		if (fread(&c.flows[c.n], sizeof(*c.flows), 1, f) != 1)
			break;
		c.n++;
	}
	fclose(f);
	if (!(w = writer(tracking ? KERNEL_BUILD_WINDOW_TRACKING : 0, &c)))
		return 1;
	run_job(w, &c, KERNEL_OP_CREATE, KERNEL_TIMEOUT_KEEP);
	print_job("load", &c);
	if (c.st.failed)
		FAIL("load: %" PRIu64 " creates failed (last errno %d)", c.st.failed, c.last_err);
	kernel_writer_free(w);
	free(c.flows);
	return failures ? 1 : 0;
}

/* ---- attrs: what conntrack -I cannot make ----------------------------------------------- */

static void v4flow(struct flow_full *ff, const char *s, const char *d, uint8_t proto, uint16_t sp, uint16_t dp)
{
	memset(ff, 0, sizeof(*ff));
	ff->flow.orig.family = AF_INET;
	inet_pton(AF_INET, s, &ff->flow.orig.src.v4);
	inet_pton(AF_INET, d, &ff->flow.orig.dst.v4);
	ff->flow.orig.l4proto = proto;
	ff->flow.orig.l4.port.sport = htons(sp);
	ff->flow.orig.l4.port.dport = htons(dp);
	ff->flow.attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK;
	ff->flow.status = IPS_CONFIRMED | IPS_SEEN_REPLY | IPS_ASSURED;
	ff->flow.timeout = 200;
	if (proto == IPPROTO_TCP) {
		ff->flow.attrs |= FLOW_A_PROTO_STATE;
		ff->flow.proto_state = 3;
	}
}

static const struct flow_full *find_flow(const struct dump_ctx *c, const struct flow_tuple *t)
{
	for (size_t i = 0; i < c->nkeep; i++)
		if (flow_tuple_equal(&c->keep[i].flow.orig, t))
			return &c->keep[i];
	return NULL;
}

static int cmd_attrs(void)
{
	struct flow_full f[6];
	struct job_ctx c = { .related_pass = true, .flows = f, .n = 6 };
	struct dump_ctx d = { .each = collect_each };
	struct kernel_writer *w = writer(0, &c);

	if (!w)
		return 1;
	/* 0: an FTP control connection with its helper, in zone 3. */
	v4flow(&f[0], "10.0.1.1", "10.0.1.2", IPPROTO_TCP, 33000, 21);
	f[0].flow.attrs |= FLOW_A_HELPER | FLOW_A_ZONE;
	strcpy(f[0].ext.helper, "ftp");
	f[0].flow.orig.zone = 3;
	f[0].flow.mark = 0x1234;
	/* 1: its data connection, related to it (same zone). */
	v4flow(&f[1], "10.0.1.2", "10.0.1.1", IPPROTO_TCP, 20, 40000);
	f[1].flow.attrs |= FLOW_A_MASTER | FLOW_A_ZONE;
	f[1].flow.orig.zone = 3;
	f[1].flow.status |= IPS_EXPECTED;
	f[1].ext.master = f[0].flow.orig;
	f[1].ext.master.zone = 0;
	/* 2: labels 0, 5, 64 and 127 (needs the labels extension: kernel.sh adds an nft rule). */
	v4flow(&f[2], "10.0.2.1", "10.0.2.2", IPPROTO_UDP, 1000, 2000);
	f[2].flow.attrs |= FLOW_A_LABELS;
	f[2].labels.words = 4;
	f[2].labels.w[0] = 1u | 1u << 5;
	f[2].labels.w[2] = 1u;
	f[2].labels.w[3] = 1u << 31;
	/* 3: NAT sequence adjustment. */
	v4flow(&f[3], "10.0.3.1", "10.0.3.2", IPPROTO_TCP, 1000, 2000);
	f[3].flow.attrs |= FLOW_A_NAT_SEQ;
	for (int i = 0; i < 6; i++)
		f[3].ext.nat_seq[i] = 1000u * (unsigned)(i + 1);
	/* 4: SNAT and DNAT with ports. */
	v4flow(&f[4], "10.0.4.1", "10.0.4.2", IPPROTO_UDP, 1000, 53);
	f[4].flow.attrs |= FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT;
	f[4].flow.status |= IPS_SRC_NAT | IPS_DST_NAT | IPS_NAT_DONE_MASK;
	inet_pton(AF_INET, "192.168.4.1", &f[4].ext.snat.v4);
	inet_pton(AF_INET, "172.16.4.9", &f[4].ext.dnat.v4);
	f[4].ext.spat = htons(4000);
	f[4].ext.dpat = htons(5353);
	/* 5: IPv4 SCTP with vtags. */
	v4flow(&f[5], "10.0.5.1", "10.0.5.2", IPPROTO_SCTP, 3868, 3868);
	f[5].flow.attrs |= FLOW_A_PROTO_STATE | FLOW_A_SCTP_VTAGS;
	f[5].flow.proto_state = 4;
	f[5].ext.sctp_vtag_orig = 0xa1b2c3d4;
	f[5].ext.sctp_vtag_repl = 0x01020304;

	run_job(w, &c, KERNEL_OP_CREATE, 200);
	print_job("attrs create", &c);
	if (c.st.failed)
		FAIL("attrs: %" PRIu64 " creates failed (last errno %d)", c.st.failed, c.last_err);
	dump_with(&d, 10000);
	for (int i = 0; i < 6; i++) {
		const struct flow_full *got = find_flow(&d, &f[i].flow.orig);
		struct flow_full want = f[i];
		const uint32_t cmp = FLOW_A_EXT_MASK | FLOW_A_LABELS | FLOW_A_MARK | FLOW_A_ZONE | FLOW_A_PROTO_STATE;

		if (!got) {
			FAIL("attrs: entry %d not in the dump", i);
			continue;
		}
		flow_full_normalize(&want);
		if ((got->flow.attrs & cmp & ~FLOW_A_SYNPROXY_EXT) != (want.flow.attrs & cmp))
			FAIL("attrs %d: attrs 0x%x, want 0x%x", i, got->flow.attrs & cmp, want.flow.attrs & cmp);
		if (memcmp(&got->ext.snat, &want.ext.snat, sizeof(want.ext.snat)) ||
		    memcmp(&got->ext.dnat, &want.ext.dnat, sizeof(want.ext.dnat)) ||
		    got->ext.spat != want.ext.spat || got->ext.dpat != want.ext.dpat)
			FAIL("attrs %d: NAT differs", i);
		if (memcmp(got->ext.nat_seq, want.ext.nat_seq, sizeof(want.ext.nat_seq)))
			FAIL("attrs %d: seq adjustment differs", i);
		if (memcmp(&got->ext.master, &want.ext.master, sizeof(want.ext.master)))
			FAIL("attrs %d: master differs", i);
		if (strcmp(got->ext.helper, want.ext.helper))
			FAIL("attrs %d: helper '%s', want '%s'", i, got->ext.helper, want.ext.helper);
		if (got->labels.words != want.labels.words ||
		    memcmp(got->labels.w, want.labels.w, want.labels.words * 4))
			FAIL("attrs %d: labels differ (%u words)", i, got->labels.words);
		if (got->flow.mark != want.flow.mark || got->flow.orig.zone != want.flow.orig.zone)
			FAIL("attrs %d: mark/zone %u/%u, want %u/%u", i, got->flow.mark, got->flow.orig.zone,
			     want.flow.mark, want.flow.orig.zone);
		if (got->ext.sctp_vtag_orig != want.ext.sctp_vtag_orig ||
		    got->ext.sctp_vtag_repl != want.ext.sctp_vtag_repl)
			FAIL("attrs %d: vtags differ", i);
		if (i == 1 && !(got->flow.status & IPS_EXPECTED))
			FAIL("attrs: the related entry is not EXPECTED (status 0x%x)", got->flow.status);
		if (i == 4 && (got->flow.status & (IPS_SRC_NAT | IPS_DST_NAT)) != (IPS_SRC_NAT | IPS_DST_NAT))
			FAIL("attrs: the NAT'ed entry lacks SRC_NAT|DST_NAT (status 0x%x)", got->flow.status);
		if ((f[i].flow.orig.l4proto == IPPROTO_TCP) && got->flow.proto_state != 3)
			FAIL("attrs %d: TCP state %u", i, got->flow.proto_state);
	}
	printf("attrs: %zu entries compared\n", d.nkeep);

	/* An update may not carry what a create set up: the kernel refuses NAT and master. */
	c.related_pass = false;
	c.mark_bump = true;
	run_job(w, &c, KERNEL_OP_UPDATE, 100);
	print_job("attrs update", &c);
	if (c.st.failed)
		FAIL("attrs: %" PRIu64 " updates failed (last errno %d)", c.st.failed, c.last_err);
	free(d.keep);
	d = (struct dump_ctx){ .each = collect_each };
	dump_with(&d, 10000);
	for (int i = 0; i < 6; i++) {
		const struct flow_full *got = find_flow(&d, &f[i].flow.orig);

		if (!got || got->flow.mark != f[i].flow.mark || got->flow.timeout > 100)
			FAIL("attrs %d: update not applied (mark %u want %u, timeout %u)", i,
			     got ? got->flow.mark : 0, f[i].flow.mark, got ? got->flow.timeout : 0);
	}
	kernel_writer_free(w);
	free(d.keep);
	return failures ? 1 : 0;
}

/* ---- bulk -------------------------------------------------------------------------------- */

static void gen_flows(struct flow_full *flows, size_t n, uint32_t timeout)
{
	for (size_t i = 0; i < n; i++) {
		struct flow_full *ff = &flows[i];

		memset(ff, 0, sizeof(*ff));
		ff->flow.orig.family = AF_INET;
		ff->flow.orig.src.v4 = htonl(0x0a640000u + (uint32_t)(i / 50000) + 1);  /* 10.100.0.x */
		ff->flow.orig.dst.v4 = htonl(0x0a650001u);
		ff->flow.orig.l4proto = IPPROTO_TCP;
		ff->flow.orig.l4.port.sport = htons((uint16_t)(1024 + i % 50000));
		ff->flow.orig.l4.port.dport = htons(80);
		ff->flow.attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_MARK | FLOW_A_PROTO_STATE | FLOW_A_TIMEOUT;
		ff->flow.status = IPS_CONFIRMED | IPS_SEEN_REPLY | IPS_ASSURED;
		ff->flow.proto_state = 3;
		ff->flow.mark = 1;
		ff->flow.timeout = timeout;
	}
}

static void count_each(struct dump_ctx *c, const struct flow_full *ff)
{
	(void)c;
	(void)ff;
}

static int cmd_bulk(size_t n)
{
	static const struct kernel_events_cb ecb = { .on_flow = ev_on_flow, .on_overrun = ev_on_overrun };
	struct kernel_events_opts eo = { .rcvbuf = 256u << 20, .rcvbuf_max = 512u << 20 };
	struct job_ctx c = { .n = n };
	struct ev_ctx e = { 0 };
	struct dump_ctx d = { .each = count_each };
	struct kernel_writer *w, *wack;
	struct kernel_events *ev;
	struct kernel_events_stats es;
	int err;
	bool idle = false;

	c.flows = malloc(n * sizeof(*c.flows));
	if (!c.flows)
		abort();
	gen_flows(c.flows, n, 300);
	if (!(w = writer(0, &c)) || !(wack = writer(KERNEL_BUILD_ACK, &c)))
		return 1;
	if (!(ev = kernel_events_open(loop, &eo, &ecb, &e, &err))) {
		FAIL("events open: %s", strerror(-err));
		return 1;
	}
	kernel_events_add_own(ev, kernel_writer_portid(w));
	kernel_events_add_own(ev, kernel_writer_portid(wack));
	kernel_events_get_stats(ev, &es);
	printf("event socket receive buffer: %u bytes\n", es.rcvbuf);

	/* create, errors only */
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	print_job("create (errors only)", &c);
	if (c.st.ok != n)
		FAIL("bulk create: %" PRIu64 " of %zu ok", c.st.ok, n);
	/* Let the events of the creates arrive. */
	for (int i = 0; i < 200 && e.n < n; i++)
		loop_run_once(loop, 20);
	printf("events after create: %" PRIu64 " (own %" PRIu64 ") in %.3f s = %.0f events/s, overruns %u\n",
	       e.n, e.own, (double)(e.last_us - e.first_us) / 1e6,
	       e.last_us > e.first_us ? (double)e.n * 1e6 / (double)(e.last_us - e.first_us) : 0.0, e.overruns);
	if (e.own != n)
		FAIL("own NEW events: %" PRIu64 ", want %zu", e.own, n);
	if (e.own != e.n)
		FAIL("events not own: %" PRIu64, e.n - e.own);

	/* EEXIST on a second create of the first 10 */
	c.n = 10;
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	if (c.st.by_errno[EEXIST] != 10 || c.errors_seen != 10)
		FAIL("second create: EEXIST %u, on_error %u, want 10", c.st.by_errno[EEXIST], c.errors_seen);
	else
		printf("second create of 10: 10 x EEXIST reported\n");
	c.n = n;

	/* update: mark 2, own events dropped in the kernel by the socket filter */
	if ((err = kernel_events_set_filter(ev, true, NULL, 0)) < 0)
		FAIL("set filter: %s", strerror(-err));
	e = (struct ev_ctx){ 0 };
	for (size_t i = 0; i < n; i++)
		c.flows[i].flow.mark = 2;
	run_job(w, &c, KERNEL_OP_UPDATE, 200);
	print_job("update (errors only)", &c);
	if (c.st.ok != n)
		FAIL("bulk update: %" PRIu64 " of %zu ok", c.st.ok, n);
	for (int i = 0; i < 20; i++)
		loop_run_once(loop, 10);
	printf("events after update with drop_own filter: %" PRIu64 "\n", e.n);
	if (e.n)
		FAIL("%" PRIu64 " own events passed the filter", e.n);
	if ((err = kernel_events_set_filter(ev, false, NULL, 0)) < 0)
		FAIL("remove filter: %s", strerror(-err));

	/* update with NLM_F_ACK on every request */
	run_job(wack, &c, KERNEL_OP_UPDATE, 250);
	print_job("update (ACK each)", &c);
	if (c.st.ok != n)
		FAIL("bulk update with ACK: %" PRIu64 " of %zu ok", c.st.ok, n);
	for (int i = 0; i < 200 && e.n < n; i++)
		loop_run_once(loop, 20);
	if (e.own != n)
		FAIL("own UPDATE events: %" PRIu64 ", want %zu", e.own, n);

	/* delete, errors only */
	e = (struct ev_ctx){ 0 };
	run_job(w, &c, KERNEL_OP_DELETE, 0);
	print_job("delete (errors only)", &c);
	if (c.st.ok != n)
		FAIL("bulk delete: %" PRIu64 " of %zu ok", c.st.ok, n);
	for (int i = 0; i < 200 && e.n < n; i++)
		loop_run_once(loop, 20);
	printf("DESTROY events: %" PRIu64 " (own %" PRIu64 ")\n", e.n, e.own);
	if (e.own != n)
		FAIL("own DESTROY events: %" PRIu64 ", want %zu", e.own, n);
	dump_with(&d, 10000);
	if (d.n)
		FAIL("%" PRIu64 " entries left after delete", d.n);

	/* create and delete again with NLM_F_ACK on every request */
	run_job(wack, &c, KERNEL_OP_CREATE, 300);
	print_job("create (ACK each)", &c);
	run_job(wack, &c, KERNEL_OP_DELETE, 0);
	print_job("delete (ACK each)", &c);
	if (c.st.ok != n)
		FAIL("bulk delete with ACK: %" PRIu64 " of %zu ok", c.st.ok, n);

	/* ENOENT on the delete of absent entries */
	c.n = 10;
	run_job(w, &c, KERNEL_OP_DELETE, 0);
	if (c.st.by_errno[ENOENT] != 10)
		FAIL("delete of absent: ENOENT %u, want 10", c.st.by_errno[ENOENT]);
	c.n = n;
	for (int i = 0; i < 10; i++)
		loop_run_once(loop, 10);
	(void)idle;
	kernel_events_get_stats(ev, &es);
	printf("event socket: %" PRIu64 " messages in %" PRIu64 " recvmmsg calls (%.1f per call), "
	       "%" PRIu64 " overruns, %" PRIu64 " malformed\n", es.messages, es.recv_calls,
	       es.recv_calls ? (double)es.messages / (double)es.recv_calls : 0.0, es.overruns, es.malformed);
	kernel_events_close(ev);
	kernel_writer_free(w);
	kernel_writer_free(wack);
	free(c.flows);
	return failures ? 1 : 0;
}

/* ---- purge and flush ---------------------------------------------------------------------- */

struct purge_ctx {
	bool done;
	int err;
	uint64_t seen;
	struct kernel_write_stats st;
};

static bool keep_mark1(void *arg, const struct flow_full *ff)
{
	(void)arg;
	return ff->flow.mark == 1;
}

static void purge_done(void *arg, int err, uint64_t seen, const struct kernel_write_stats *st)
{
	struct purge_ctx *p = arg;

	p->done = true;
	p->err = err;
	p->seen = seen;
	p->st = *st;
}

static bool all_mark1;

static void check_mark1(struct dump_ctx *c, const struct flow_full *ff)
{
	(void)c;
	if (ff->flow.mark != 1)
		all_mark1 = false;
}

static int cmd_purge(void)
{
	const size_t n = 2000;
	struct job_ctx c = { .n = n };
	struct purge_ctx p = { 0 };
	struct dump_ctx d = { .each = check_mark1 };
	struct kernel_writer *w;
	int err;

	c.flows = malloc(n * sizeof(*c.flows));
	gen_flows(c.flows, n, 300);
	for (size_t i = n / 2; i < n; i++)
		c.flows[i].flow.mark = 2;
	if (!(w = writer(0, &c)))
		return 1;
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	if ((err = kernel_writer_purge(w, AF_UNSPEC, keep_mark1, purge_done, &p)) < 0) {
		FAIL("purge: %s", strerror(-err));
		return 1;
	}
	if (kernel_writer_run(w, 0, job_next, job_done, &c) != -EBUSY)
		FAIL("a job started during a purge");
	run_until(&p.done, 20000);
	printf("purge: seen %" PRIu64 ", deleted %" PRIu64 " (failed %" PRIu64 ") in %.3f s, err %d\n",
	       p.seen, p.st.ok, p.st.failed, (double)p.st.elapsed_us / 1e6, p.err);
	if (!p.done || p.err || p.st.ok != n / 2 || p.st.failed)
		FAIL("purge: done %d err %d deleted %" PRIu64 " want %zu", p.done, p.err, p.st.ok, n / 2);
	all_mark1 = true;
	dump_with(&d, 10000);
	if (d.n != n / 2 || !all_mark1)
		FAIL("after purge: %" PRIu64 " entries (want %zu), all mark 1: %d", d.n, n / 2, all_mark1);

	/* Flush the whole table: one request. */
	c.errors_seen = 0;
	kernel_writer_put(w, KERNEL_OP_FLUSH, NULL, 0, 1);
	kernel_writer_flush(w);
	if (c.errors_seen)
		FAIL("flush failed: %s", strerror(c.last_err));
	dump_with(&d, 10000);
	printf("after flush: %" PRIu64 " entries\n", d.n);
	if (d.n)
		FAIL("%" PRIu64 " entries left after the flush", d.n);
	kernel_writer_free(w);
	free(c.flows);
	return failures ? 1 : 0;
}

/* ---- slices: the loop keeps serving during a dump ------------------------------------------ */

static unsigned ticks;

static void on_tick(struct loop *l, struct loop_timer *t, void *arg)
{
	(void)l;
	(void)arg;
	ticks++;
	loop_timer_arm(t, 1);
}

static int cmd_slices(size_t n)
{
	struct job_ctx c = { .n = n };
	struct dump_ctx d = { .each = count_each };
	struct kernel_writer *w;
	struct loop_timer *t = loop_timer_new(loop, on_tick, NULL);
	unsigned job_ticks, dump_ticks;

	c.flows = malloc(n * sizeof(*c.flows));
	gen_flows(c.flows, n, 300);
	if (!(w = writer(0, &c)))
		return 1;
	ticks = 0;
	loop_timer_arm(t, 1);
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	job_ticks = ticks;
	print_job("create", &c);
	ticks = 0;
	dump_with(&d, 30000);
	dump_ticks = ticks;
	printf("dump: %" PRIu64 " entries in %.3f s (%.0f/s), %" PRIu64 " recv calls; "
	       "1 ms timer fired %u times during the create job, %u during the dump\n",
	       d.n, (double)d.st.elapsed_us / 1e6,
	       d.st.elapsed_us ? (double)d.n * 1e6 / (double)d.st.elapsed_us : 0.0,
	       d.st.recv_calls, job_ticks, dump_ticks);
	if (d.n != n)
		FAIL("dump saw %" PRIu64 " of %zu", d.n, n);
	if (job_ticks < 2 || dump_ticks < 2)
		FAIL("the loop did not serve its timer while the job / dump ran");
	loop_timer_free(t);
	kernel_writer_free(w);
	free(c.flows);
	return failures ? 1 : 0;
}

/* ---- listen: event rate and cost ------------------------------------------------------------ */

/* user + system CPU time of the process, precise (not tick-sampled). */
static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_listen(uint64_t n, unsigned secs, unsigned coalesce_ms)
{
	/* With coalescing, as the daemon reads them: parsed ahead with prefetch hints. */
	static const struct kernel_events_cb plain = { .on_flow = ev_on_flow, .on_overrun = ev_on_overrun };
	static const struct kernel_events_cb hinted = { .on_flow = ev_on_flow, .on_overrun = ev_on_overrun,
							.prefetch = ev_on_prefetch };
	const struct kernel_events_cb *cb = coalesce_ms ? &hinted : &plain;
	struct kernel_events_opts o = { .rcvbuf = 64u << 20, .rcvbuf_max = 256u << 20,
					.coalesce_us = coalesce_ms * 1000u };
	struct ev_ctx c = { .limit = n };
	double cpu0;
	int err;
	struct kernel_events *ev = kernel_events_open(loop, &o, cb, &c, &err);

	if (!ev) {
		FAIL("events open: %s", strerror(-err));
		return 1;
	}
	puts("ready");
	fflush(stdout);
	cpu0 = cpu_seconds();
	run_until(&c.done, secs * 1000);
	printf("listen (coalesce %u ms): %" PRIu64 " events in %.3f s = %.0f events/s, %.2f us CPU per event "
	       "(user + system), overruns %u\n", coalesce_ms, c.n, (double)(c.last_us - c.first_us) / 1e6,
	       c.last_us > c.first_us ? (double)c.n * 1e6 / (double)(c.last_us - c.first_us) : 0.0,
	       c.n ? (cpu_seconds() - cpu0) * 1e6 / (double)c.n : 0.0, c.overruns);
	{
		struct kernel_events_stats st;

		kernel_events_get_stats(ev, &st);
		printf("listen: %" PRIu64 " recvmmsg calls, %.1f messages per call\n", st.recv_calls,
		       st.recv_calls ? (double)st.messages / (double)st.recv_calls : 0.0);
	}
	if (cb->prefetch) {
		printf("listen: %" PRIu64 " events parsed ahead (prefetch hints), %" PRIu64 " out of order\n",
		       c.hints, c.hint_mismatch);
		if (c.hint_mismatch || (c.n > 1000 && c.hints == 0))
			FAIL("prefetch hints: %" PRIu64 " for %" PRIu64 " events, %" PRIu64 " not followed by "
			     "their own event", c.hints, c.n, c.hint_mismatch);
	}
	kernel_events_close(ev);
	return c.done && !failures ? 0 : 1;
}

/* ---- create: a producer for listen ---------------------------------------------------------- */

static int cmd_create(size_t n)
{
	struct job_ctx c = { .n = n };
	struct kernel_writer *w;

	c.flows = malloc(n * sizeof(*c.flows));
	if (!c.flows)
		abort();
	gen_flows(c.flows, n, 300);
	if (!(w = writer(0, &c)))
		return 1;
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	print_job("create", &c);
	if (c.st.ok != n)
		FAIL("create: %" PRIu64 " of %zu ok", c.st.ok, n);
	kernel_writer_free(w);
	free(c.flows);
	return failures ? 1 : 0;
}

/* ---- overrun: ENOBUFS reported, buffer grown ------------------------------------------------- */

static int cmd_overrun(void)
{
	static const struct kernel_events_cb ecb = { .on_flow = ev_on_flow, .on_overrun = ev_on_overrun };
	struct kernel_events_opts eo = { .rcvbuf = 64u << 10, .rcvbuf_max = 256u << 10 };
	const size_t n = 5000;
	struct job_ctx c = { .n = n };
	struct ev_ctx e = { 0 };
	struct kernel_events_stats st0, st;
	struct kernel_writer *w;
	struct kernel_events *ev;
	int err;

	c.flows = malloc(n * sizeof(*c.flows));
	gen_flows(c.flows, n, 300);
	if (!(w = writer(0, &c)))
		return 1;
	if (!(ev = kernel_events_open(loop, &eo, &ecb, &e, &err))) {
		FAIL("events open: %s", strerror(-err));
		return 1;
	}
	kernel_events_get_stats(ev, &st0);
	/* An empty table first, so that every create makes an event. */
	kernel_events_pause(ev);
	kernel_writer_put(w, KERNEL_OP_FLUSH, NULL, 0, 0);
	kernel_writer_flush(w);
	/* Not read while the burst comes in: the 64 KiB buffer must overflow. */
	kernel_events_pause(ev);
	run_job(w, &c, KERNEL_OP_CREATE, 300);
	if ((err = kernel_events_resume(ev)) < 0)
		FAIL("resume: %s", strerror(-err));
	for (int i = 0; i < 20; i++)
		loop_run_once(loop, 10);
	kernel_events_get_stats(ev, &st);
	printf("overrun: buffer %u -> %u bytes, %u overrun callbacks, %" PRIu64 " of %zu events read\n",
	       st0.rcvbuf, st.rcvbuf, e.overruns, e.n, n);
	if (!e.overruns || st.overruns != e.overruns)
		FAIL("no overrun reported");
	if (st.rcvbuf <= st0.rcvbuf)
		FAIL("the buffer did not grow (%u -> %u)", st0.rcvbuf, st.rcvbuf);
	if (st.rcvbuf > 2 * eo.rcvbuf_max)
		FAIL("the buffer grew past its maximum: %u", st.rcvbuf);
	if (!e.n || e.n >= n)
		FAIL("events read: %" PRIu64, e.n);
	kernel_events_close(ev);
	kernel_writer_free(w);
	free(c.flows);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	log_open("kernel-driver", "", -1, true);
	loop = loop_new();
	if (!loop)
		return 2;
	if (argc >= 2 && !strcmp(argv[1], "dump"))
		rc = cmd_dump();
	else if (argc >= 4 && !strcmp(argv[1], "events"))
		rc = cmd_events(strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]));
	else if (argc >= 3 && !strcmp(argv[1], "save"))
		rc = cmd_save(argv[2]);
	else if (argc >= 3 && !strcmp(argv[1], "load"))
		rc = cmd_load(argv[2], argc >= 4 && !strcmp(argv[3], "--window-tracking"));
	else if (argc >= 2 && !strcmp(argv[1], "attrs"))
		rc = cmd_attrs();
	else if (argc >= 3 && !strcmp(argv[1], "bulk"))
		rc = cmd_bulk(strtoull(argv[2], NULL, 10));
	else if (argc >= 2 && !strcmp(argv[1], "purge"))
		rc = cmd_purge();
	else if (argc >= 3 && !strcmp(argv[1], "slices"))
		rc = cmd_slices(strtoull(argv[2], NULL, 10));
	else if (argc >= 4 && !strcmp(argv[1], "listen"))
		rc = cmd_listen(strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]),
				argc >= 5 ? (unsigned)atoi(argv[4]) : 0);
	else if (argc >= 2 && !strcmp(argv[1], "overrun"))
		rc = cmd_overrun();
	else if (argc >= 3 && !strcmp(argv[1], "create"))
		rc = cmd_create(strtoull(argv[2], NULL, 10));
	else
		fprintf(stderr, "usage: %s dump | events N SECS | save FILE | load FILE [--window-tracking] | "
			"attrs | bulk N | purge | slices N | listen N SECS [MS] | overrun | create N\n", argv[0]);
	loop_free(loop);
	log_close();
	return rc;
}
