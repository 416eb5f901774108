/*
 * link-driver.c - the link module on the real loop, driven line by line
 * from stdin by tests/integration/link.sh.
 *
 *   link-driver -C conntrackd.conf
 *
 * It opens a link group from the Sync block and answers commands, one
 * after the other; each command ends with a line "= N" (N counts the
 * commands, 0 is the start-up), so the script can wait for it:
 *
 *   send N [SIZE]        send N numbered messages of SIZE bytes (84) as
 *                        fast as the link takes them: full datagrams,
 *                        paced by link_group_backlog()
 *   rate N R [SIZE]      send N messages at R per second
 *   wait-recv N SECS     until N distinct messages arrived (or time out)
 *   wait-report RE SECS  until the link report matches the regex RE
 *   stats                what arrived: messages, datagrams, sizes, gaps
 *   reset                forget what arrived
 *   report / json        the link report (-s link) as text / JSON
 *   active I             make link I the active one
 *   quit
 *
 * Messages are real wire-format messages: an 8-byte header (version 1,
 * CT_UPD, length, sequence number) and padding derived from the sequence
 * number, which the receiver checks byte for byte.  Asynchronous events
 * ("switch A -> B") are printed as they happen.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "control/link_report.h"
#include "link/link.h"
#include "loop/log.h"
#include "loop/loop.h"
#include "control/report.h"
#include "wire/wire.h"

#define MAX_SEQ         (1u << 20)
#define LINE_MAX_LEN    512
#define HIST_MAX        128

enum cmd_state { CMD_IDLE, CMD_SEND, CMD_RATE, CMD_WAIT_RECV, CMD_WAIT_REPORT, CMD_SLEEP };

struct driver {
	struct loop *loop;
	struct link_group *g;
	struct loop_timer *tick;
	struct loop_timer *deadline;
	unsigned ncmd;
	/* stdin */
	char in[8192];
	size_t in_len;
	bool in_eof;
	char **queue;
	size_t queued, queue_cap;
	/* the running command */
	enum cmd_state state;
	uint32_t want;                  /* send: messages left; wait-recv: distinct wanted */
	uint32_t rate;
	size_t size;
	bool timed_out;
	regex_t re;
	bool re_set;
	/* sending */
	uint32_t next_seq;
	/* receiving */
	uint8_t *seen;                  /* bitmap of MAX_SEQ */
	uint64_t msgs, distinct, dups, corrupt, bad_frames, chunks, bytes;
	uint64_t max_chunk, max_msgs, per_link[CONFIG_MAX_LINKS];
	uint64_t hist[HIST_MAX + 1];
	uint32_t lo_seq, hi_seq;
};

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void make_msg(uint8_t *p, size_t len, uint32_t seq)
{
	uint16_t l16 = htons((uint16_t)len);
	uint32_t s32 = htonl(seq);

	p[0] = (WIRE_VERSION << 4) | WIRE_T_CT_UPD;
	p[1] = 0;
	memcpy(p + 2, &l16, 2);
	memcpy(p + 4, &s32, 4);
	for (size_t i = WIRE_HDR_LEN; i < len; i++)
		p[i] = (uint8_t)(seq * 7 + i);
}

static bool msg_ok(const uint8_t *p, size_t len, uint32_t seq)
{
	if (p[0] != ((WIRE_VERSION << 4) | WIRE_T_CT_UPD) || p[1] != 0)
		return false;
	for (size_t i = WIRE_HDR_LEN; i < len; i++)
		if (p[i] != (uint8_t)(seq * 7 + i))
			return false;
	return true;
}

/* ---- receiving ------------------------------------------------------------------ */

static void on_receive(void *arg, struct link *from, const void *buf, size_t len,
		       const struct sockaddr *src)
{
	struct driver *d = arg;
	struct wire_split s;
	struct wire_msg m;
	uint64_t n = 0;

	d->chunks++;
	d->bytes += len;
	if (len > d->max_chunk)
		d->max_chunk = len;
	if (link_index(from) < CONFIG_MAX_LINKS)
		d->per_link[link_index(from)]++;
	wire_split_init(&s, buf, len, false);
	for (;;) {
		enum wire_split_status st = wire_split_next(&s, &m);
		uint32_t seq;

		if (st == WIRE_SPLIT_END)
			break;
		if (st != WIRE_SPLIT_MSG || m.reason != WIRE_OK) {
			d->bad_frames++;
			break;
		}
		n++;
		d->msgs++;
		seq = m.hdr.seq;
		if (!msg_ok(m.data, m.len, seq) || seq >= MAX_SEQ) {
			d->corrupt++;
			continue;
		}
		if (d->seen[seq / 8] & (1u << (seq % 8))) {
			d->dups++;
			continue;
		}
		d->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
		if (d->distinct == 0 || seq < d->lo_seq)
			d->lo_seq = seq;
		if (d->distinct == 0 || seq > d->hi_seq)
			d->hi_seq = seq;
		d->distinct++;
	}
	if (n > d->max_msgs)
		d->max_msgs = n;
	d->hist[n > HIST_MAX ? HIST_MAX : n]++;
}

static void reset_recv(struct driver *d)
{
	memset(d->seen, 0, MAX_SEQ / 8);
	d->msgs = d->distinct = d->dups = d->corrupt = d->bad_frames = 0;
	d->chunks = d->bytes = d->max_chunk = d->max_msgs = 0;
	memset(d->per_link, 0, sizeof(d->per_link));
	memset(d->hist, 0, sizeof(d->hist));
	d->lo_seq = d->hi_seq = 0;
}

static void print_stats(struct driver *d)
{
	uint64_t missing = 0, tx_packets = 0, tx_bytes = 0;
	char hist[1024] = "";
	size_t off = 0;

	if (d->distinct)
		missing = (uint64_t)(d->hi_seq - d->lo_seq + 1) - d->distinct;
	for (unsigned i = 0; i <= HIST_MAX && off < sizeof(hist) - 32; i++)
		if (d->hist[i])
			off += (size_t)snprintf(hist + off, sizeof(hist) - off, "%s%u:%llu",
						off ? "," : "", i, (unsigned long long)d->hist[i]);
	for (unsigned i = 0; i < link_group_count(d->g); i++) {
		struct link_stats st;

		link_get_stats(link_group_link(d->g, i), &st);
		tx_packets += st.packets_sent;
		tx_bytes += st.bytes_sent;
	}
	out("stats msgs=%llu distinct=%llu dups=%llu corrupt=%llu bad_frames=%llu "
	    "chunks=%llu bytes=%llu max_chunk=%llu max_msgs=%llu lo=%u hi=%u missing=%llu "
	    "link0=%llu link1=%llu tx_packets=%llu tx_bytes=%llu payload_max=%zu hist=%s\n",
	    (unsigned long long)d->msgs, (unsigned long long)d->distinct,
	    (unsigned long long)d->dups, (unsigned long long)d->corrupt,
	    (unsigned long long)d->bad_frames, (unsigned long long)d->chunks,
	    (unsigned long long)d->bytes, (unsigned long long)d->max_chunk,
	    (unsigned long long)d->max_msgs, d->lo_seq, d->hi_seq, (unsigned long long)missing,
	    (unsigned long long)d->per_link[0], (unsigned long long)d->per_link[1],
	    (unsigned long long)tx_packets, (unsigned long long)tx_bytes,
	    link_group_payload_max(d->g), hist);
}

static char *render(struct driver *d, enum report_format f)
{
	struct report *r = report_new(f);
	const char *text;
	char *copy = NULL;

	if (!r)
		return NULL;
	control_report_link_group(r, d->g);
	text = report_finish(r, NULL);
	if (text)
		copy = strdup(text);
	report_free(r);
	return copy;
}

/* ---- commands ---------------------------------------------------------------------- */

static void start_next(struct driver *d);

static void finish_cmd(struct driver *d)
{
	d->state = CMD_IDLE;
	loop_timer_disarm(d->deadline);
	loop_timer_disarm(d->tick);
	if (d->re_set) {
		regfree(&d->re);
		d->re_set = false;
	}
	out("= %u\n", d->ncmd);
	start_next(d);
}

static void send_some(struct driver *d, uint32_t n)
{
	uint8_t msg[LINK_MSG_MAX];

	for (uint32_t i = 0; i < n && d->want > 0; i++, d->want--) {
		make_msg(msg, d->size, d->next_seq);
		if (link_group_append(d->g, msg, d->size) < 0) {
			out("append failed\n");
			d->want = 0;
			break;
		}
		d->next_seq++;
	}
}

static bool report_matches(struct driver *d)
{
	char *text = render(d, REPORT_TEXT);
	bool ok = text && regexec(&d->re, text, 0, NULL, 0) == 0;

	free(text);
	return ok;
}

/* Runs before every sleep, before the flush hook: produce, and decide whether a command is over. */
static void on_before_sleep(struct loop *loop, void *arg)
{
	struct driver *d = arg;

	switch (d->state) {
	case CMD_SEND:
		if (d->want > 0 && link_group_backlog(d->g) == 0) {
			size_t per = link_group_payload_max(d->g) / d->size;

			/* Sixteen full datagrams per iteration; the flush hook sends them. */
			send_some(d, (uint32_t)((per ? per : 1) * 16));
			loop_timer_arm(d->tick, 0);	/* come back without sleeping */
			break;
		}
		/* fall through */
	case CMD_RATE:
		if (d->want == 0 && link_group_buffered(d->g) == 0 &&
		    link_group_backlog(d->g) == 0) {
			out("sent next_seq=%u\n", d->next_seq);
			finish_cmd(d);
		} else if (!loop_timer_armed(d->tick)) {
			/* Look again soon: the last batch is flushed after this hook. */
			loop_timer_arm(d->tick, 10);
		}
		break;
	case CMD_WAIT_RECV:
		if (d->distinct >= d->want) {
			out("recv-ok distinct=%llu\n", (unsigned long long)d->distinct);
			finish_cmd(d);
		} else if (d->timed_out) {
			out("recv-timeout distinct=%llu\n", (unsigned long long)d->distinct);
			finish_cmd(d);
		}
		break;
	case CMD_WAIT_REPORT:
		if (report_matches(d)) {
			out("report-ok\n");
			finish_cmd(d);
		} else if (d->timed_out) {
			char *text = render(d, REPORT_TEXT);

			out("report-timeout\n%s", text ? text : "");
			free(text);
			finish_cmd(d);
		}
		break;
	case CMD_SLEEP:
		if (d->timed_out)
			finish_cmd(d);
		break;
	case CMD_IDLE:
		break;
	}
}

static void on_flush(struct loop *loop, void *arg)
{
	struct driver *d = arg;

	link_group_flush(d->g);
}

static void on_tick(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct driver *d = arg;

	if (d->state == CMD_RATE && d->want > 0) {
		uint32_t n = d->rate / 100;

		send_some(d, n ? n : 1);
		loop_timer_arm(t, 10);
	} else if (d->state == CMD_WAIT_REPORT) {
		loop_timer_arm(t, 50);	/* the report is checked before the next sleep */
	}
}

static void on_deadline(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct driver *d = arg;

	d->timed_out = true;
}

static void on_switch(void *arg, struct link *old, struct link *now)
{
	out("switch %s -> %s\n", link_ifname(old), link_ifname(now));
}

static void run_cmd(struct driver *d, char *line)
{
	char *argv[8];
	int argc = 0;
	char *save = NULL;

	for (char *tok = strtok_r(line, " \t", &save); tok && argc < 8;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	d->ncmd++;
	d->timed_out = false;
	/* Let the before-sleep hook look at the new command without waiting for an event. */
	loop_timer_arm(d->tick, 0);
	if (argc == 0) {
		finish_cmd(d);
	} else if (!strcmp(argv[0], "send") && argc >= 2) {
		d->want = (uint32_t)strtoul(argv[1], NULL, 10);
		d->size = argc >= 3 ? strtoul(argv[2], NULL, 10) : 84;
		d->state = CMD_SEND;
	} else if (!strcmp(argv[0], "rate") && argc >= 3) {
		d->want = (uint32_t)strtoul(argv[1], NULL, 10);
		d->rate = (uint32_t)strtoul(argv[2], NULL, 10);
		d->size = argc >= 4 ? strtoul(argv[3], NULL, 10) : 84;
		d->state = CMD_RATE;
		loop_timer_arm(d->tick, 0);
	} else if (!strcmp(argv[0], "wait-recv") && argc >= 3) {
		d->want = (uint32_t)strtoul(argv[1], NULL, 10);
		d->state = CMD_WAIT_RECV;
		loop_timer_arm(d->deadline, strtoul(argv[2], NULL, 10) * 1000);
	} else if (!strcmp(argv[0], "wait-report") && argc >= 3) {
		if (regcomp(&d->re, argv[1], REG_EXTENDED | REG_NOSUB) != 0) {
			out("bad regex\n");
			finish_cmd(d);
			return;
		}
		d->re_set = true;
		d->state = CMD_WAIT_REPORT;
		loop_timer_arm(d->deadline, strtoul(argv[2], NULL, 10) * 1000);
		loop_timer_arm(d->tick, 50);
	} else if (!strcmp(argv[0], "sleep") && argc >= 2) {
		d->state = CMD_SLEEP;
		loop_timer_arm(d->deadline, strtoul(argv[1], NULL, 10));
	} else if (!strcmp(argv[0], "stats")) {
		print_stats(d);
		finish_cmd(d);
	} else if (!strcmp(argv[0], "reset")) {
		reset_recv(d);
		finish_cmd(d);
	} else if (!strcmp(argv[0], "report") || !strcmp(argv[0], "json")) {
		char *text = render(d, argv[0][0] == 'r' ? REPORT_TEXT : REPORT_JSON);

		out("%s", text ? text : "report failed\n");
		free(text);
		finish_cmd(d);
	} else if (!strcmp(argv[0], "active") && argc >= 2) {
		link_group_set_active(d->g, link_group_link(d->g, (unsigned)atoi(argv[1])));
		finish_cmd(d);
	} else if (!strcmp(argv[0], "quit")) {
		link_group_flush(d->g);
		loop_stop(d->loop);
	} else {
		out("unknown command '%s'\n", argv[0]);
		finish_cmd(d);
	}
	if (d->size < WIRE_HDR_LEN || d->size > LINK_MSG_MAX)
		d->size = 84;
}

static void start_next(struct driver *d)
{
	char *line;

	if (d->state != CMD_IDLE)
		return;
	if (d->queued == 0) {
		if (d->in_eof)
			loop_stop(d->loop);
		return;
	}
	line = d->queue[0];
	memmove(d->queue, d->queue + 1, (d->queued - 1) * sizeof(*d->queue));
	d->queued--;
	run_cmd(d, line);
	free(line);
}

static void on_stdin(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct driver *d = arg;
	ssize_t n = read(fd, d->in + d->in_len, sizeof(d->in) - d->in_len - 1);
	char *nl;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		loop_unwatch(loop, fd);
		d->in_eof = true;
		start_next(d);
		return;
	}
	d->in_len += (size_t)n;
	d->in[d->in_len] = '\0';
	while ((nl = strchr(d->in, '\n')) != NULL) {
		size_t len = (size_t)(nl - d->in);

		*nl = '\0';
		if (d->queued == d->queue_cap) {
			size_t cap = d->queue_cap ? d->queue_cap * 2 : 16;
			char **q = realloc(d->queue, cap * sizeof(*q));

			if (!q)
				exit(2);
			d->queue = q;
			d->queue_cap = cap;
		}
		d->queue[d->queued++] = strdup(d->in);
		memmove(d->in, nl + 1, d->in_len - len - 1);
		d->in_len -= len + 1;
		d->in[d->in_len] = '\0';
	}
	if (d->in_len == sizeof(d->in) - 1)
		d->in_len = 0;	/* a line longer than the buffer: drop it */
	start_next(d);
}

int main(int argc, char **argv)
{
	struct driver d = { .size = 84 };
	struct config cfg;
	struct config_error err;
	struct link_group_params p = { 0 };
	int opt, rc;

	while ((opt = getopt(argc, argv, "C:")) != -1) {
		if (opt != 'C') {
			fprintf(stderr, "usage: %s -C conntrackd.conf\n", argv[0]);
			return 2;
		}
		if (config_parse_file(&cfg, optarg, &err, NULL, NULL) < 0) {
			fprintf(stderr, "%s:%u:%u: %s\n", err.file, err.line, err.column, err.message);
			return 2;
		}
	}
	if (optind != argc || argc < 3) {
		fprintf(stderr, "usage: %s -C conntrackd.conf\n", argv[0]);
		return 2;
	}
	log_open("link-driver", "", -1, true);
	d.seen = calloc(MAX_SEQ / 8, 1);
	d.loop = loop_new();
	if (!d.seen || !d.loop)
		return 2;
	d.tick = loop_timer_new(d.loop, on_tick, &d);
	d.deadline = loop_timer_new(d.loop, on_deadline, &d);
	p.sync = &cfg.sync;
	p.event_iteration_limit = cfg.general.event_iteration_limit;
	p.on_receive = on_receive;
	p.on_switch = on_switch;
	p.frame_len = wire_frame_len;
	p.frame_valid = wire_frame_valid;
	p.arg = &d;
	rc = link_group_open(&d.g, d.loop, &p);
	if (rc < 0) {
		fprintf(stderr, "link_group_open: %s\n", strerror(-rc));
		return 1;
	}
	/* Produce first, then flush: registration order is run order. */
	loop_before_sleep(d.loop, on_before_sleep, &d);
	loop_before_sleep(d.loop, on_flush, &d);
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	loop_watch(d.loop, 0, LOOP_READ, on_stdin, &d);
	out("ready payload_max=%zu active=%s\n= 0\n", link_group_payload_max(d.g),
	    link_ifname(link_group_active(d.g)));
	rc = loop_run(d.loop);
	link_group_flush(d.g);
	link_group_close(d.g);
	loop_timer_free(d.tick);
	loop_timer_free(d.deadline);
	loop_free(d.loop);
	config_free(&cfg);
	for (size_t i = 0; i < d.queued; i++)
		free(d.queue[i]);
	free(d.queue);
	free(d.seen);
	return rc < 0 ? 1 : 0;
}
