/*
 * writer.c - batched ctnetlink writes: create, update, delete, flush.
 *
 * Requests are encoded back to back into one buffer and sent with one
 * sendmsg().  ctnetlink processes every message of it before sendmsg()
 * returns and queues its answers on our socket, so the answers of a batch
 * are read right after, without waiting; each is matched to its request
 * by sequence number.  By default only failures are answered (no
 * NLM_F_ACK): a clean batch costs one system call and no answer at all.
 *
 * Answers must fit in the receive buffer, or the kernel drops them: the
 * number of requests per batch is bounded by the buffer's size divided by
 * the size an answer takes there (ANSWER_TRUESIZE, measured with some
 * margin), and the buffer is sized for a full batch.
 */
#include "kernel/kernel.h"
#include "nl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include "loop/log.h"
#include "loop/loop.h"

#define DEFAULT_BATCH (256 * 1024)
#define MIN_BATCH (16 * 1024)
#define MIN_REQUEST 64                  /* a delete of an IPv4 tuple is 80 bytes */
#define ANSWER_TRUESIZE 1024            /* receive-buffer charge of one answer skb, rounded up */
#define ANSWER_SLOTS 256
#define ANSWER_SLOT_SIZE 256            /* an answer with NETLINK_CAP_ACK is 36 bytes */
#define DEFAULT_PER_SLICE 8192

/* What a request in the batch in flight was, to account for its answer. */
struct req_rec {
	uint64_t cookie;
	uint8_t op;
	uint8_t kind;                   /* REQ_* */
	uint8_t answered;               /* failed, or acked */
	uint8_t pad;
};

enum { REQ_PLAIN, REQ_JOB, REQ_PURGE };

struct err_rec {
	uint64_t cookie;
	uint8_t op;
	int err;
};

struct kernel_writer {
	struct loop *loop;
	struct mnl_socket *nl;
	int fd;
	uint32_t portid;
	struct kernel_writer_cb cb;
	void *arg;
	unsigned build_opts;

	uint8_t *buf;
	size_t cap, len;
	struct req_rec *recs;
	unsigned nrec, maxrec;
	uint32_t first_seq, next_seq;

	struct err_rec *errq;
	size_t nerr, errcap;
	bool delivering;

	struct kernel_write_stats total;

	/* The job or purge in progress. */
	struct kernel_write_stats job;
	bool job_active;
	bool job_exhausted;
	unsigned per_slice;
	kernel_job_next_fn next;
	kernel_job_done_fn done;
	void *job_arg;
	uint64_t job_start;
	struct loop_timer *job_timer;

	struct kernel_dump *purge;
	kernel_keep_fn keep;
	kernel_purge_done_fn purge_done;
	uint64_t purge_seen;

	struct mmsghdr msgs[ANSWER_SLOTS];
	struct iovec iov[ANSWER_SLOTS];
	struct sockaddr_nl from[ANSWER_SLOTS];
	uint8_t answers[ANSWER_SLOTS][ANSWER_SLOT_SIZE];
};

static void count(struct kernel_write_stats *st, enum kernel_op op, int err)
{
	st->requests++;
	if (!err) {
		st->ok++;
		return;
	}
	st->failed++;
	st->by_op_failed[op]++;
	st->by_errno[err > 0 && err < KERNEL_ERRNO_MAX ? err : 0]++;
}

static void account(struct kernel_writer *w, const struct req_rec *r, int err)
{
	/* A purge deletes what it just saw: gone meanwhile is as good as deleted. */
	if (r->kind == REQ_PURGE && err == ENOENT)
		err = 0;
	count(&w->total, r->op, err);
	if (r->kind != REQ_PLAIN)
		count(&w->job, r->op, err);
	if (err && r->kind != REQ_PURGE && w->cb.on_error) {
		if (w->nerr == w->errcap) {
			size_t cap = w->errcap ? w->errcap * 2 : 64;
			struct err_rec *q = realloc(w->errq, cap * sizeof(*q));

			if (!q) {
				log_error("kernel writer: out of memory, a failure (%s) is not reported",
					  strerror(err));
				return;
			}
			w->errq = q;
			w->errcap = cap;
		}
		w->errq[w->nerr++] = (struct err_rec){ r->cookie, r->op, err };
	}
}

/* Deliver queued failures; callbacks may put and flush again (appending here). */
static void deliver(struct kernel_writer *w)
{
	if (w->delivering)
		return;
	w->delivering = true;
	for (size_t i = 0; i < w->nerr; i++) {
		struct err_rec e = w->errq[i];

		w->cb.on_error(w->arg, (enum kernel_op)e.op, e.cookie, e.err);
	}
	w->nerr = 0;
	w->delivering = false;
}

/* Read every answer queued for the batch just sent. Returns true if some were lost. */
static bool read_answers(struct kernel_writer *w)
{
	bool lost = false;

	for (;;) {
		int n;

		for (unsigned i = 0; i < ANSWER_SLOTS; i++) {
			w->msgs[i].msg_hdr.msg_namelen = sizeof(w->from[i]);
			w->msgs[i].msg_hdr.msg_flags = 0;
		}
		n = recvmmsg(w->fd, w->msgs, ANSWER_SLOTS, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				lost = true;
				continue;
			}
			break;          /* EAGAIN: all read */
		}
		for (int i = 0; i < n; i++) {
			int len = (int)w->msgs[i].msg_len;
			const struct nlmsghdr *nlh = (const struct nlmsghdr *)w->answers[i];

			if (w->from[i].nl_pid != 0)
				continue;
			for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
				uint32_t idx = nlh->nlmsg_seq - w->first_seq;
				struct req_rec *r;

				if (nlh->nlmsg_type != NLMSG_ERROR ||
				    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || idx >= w->nrec)
					continue;
				r = &w->recs[idx];
				if (r->answered)
					continue;
				r->answered = 1;
				account(w, r, e->error < 0 ? -e->error : e->error);
			}
		}
		if (n < ANSWER_SLOTS)
			break;
	}
	return lost;
}

static int send_batch(struct kernel_writer *w)
{
	uint64_t t0;
	ssize_t n;
	int err = 0;
	bool lost;

	if (!w->len)
		return 0;
	t0 = nl_now_us();
	do {
		n = send(w->fd, w->buf, w->len, 0);
	} while (n < 0 && errno == EINTR);
	w->total.batches++;
	if (n < 0) {
		err = -errno;
		log_error("kernel writer: sendmsg of %zu bytes (%u requests): %s", w->len, w->nrec,
			  strerror(errno));
		for (unsigned i = 0; i < w->nrec; i++)
			account(w, &w->recs[i], -err);
	} else {
		bool ack = w->build_opts & KERNEL_BUILD_ACK;

		if (w->job_active)
			w->job.batches++;
		lost = read_answers(w);
		for (unsigned i = 0; i < w->nrec; i++) {
			struct req_rec *r = &w->recs[i];

			if (r->answered)
				continue;
			if (ack && lost) {
				w->total.lost++;
				if (r->kind != REQ_PLAIN)
					w->job.lost++;
				account(w, r, ENOBUFS);
			} else {
				account(w, r, 0);
			}
		}
		if (lost && !ack)
			log_error("kernel writer: answers of a batch of %u requests were lost "
				  "(receive buffer overrun); failures may be unreported", w->nrec);
	}
	w->len = 0;
	w->nrec = 0;
	w->first_seq = w->next_seq;
	w->total.elapsed_us += nl_now_us() - t0;
	return err;
}

int kernel_writer_flush(struct kernel_writer *w)
{
	int err = send_batch(w);

	deliver(w);
	return err;
}

/*
 * What was put during this iteration goes out before the loop sleeps,
 * after every other hook has had its say.  A failure callback may put
 * again (an update in place after EEXIST): that batch goes out in the
 * next iteration, which then does not wait.
 */
static void before_sleep(struct loop *loop, void *arg)
{
	struct kernel_writer *w = arg;

	if (w->len || w->nerr)
		kernel_writer_flush(w);
	if (w->len || w->nerr)
		loop_wake(loop);
}

/* One request for a flow, or for an expectation when `x` is set. */
static int build(struct kernel_writer *w, size_t at, enum kernel_op op, const struct flow_full *ff,
		 const struct flow_exp *x, uint32_t timeout)
{
	if (x)
		return kernel_exp_build(w->buf + at, w->cap - at, op, x, timeout, w->build_opts,
					w->next_seq);
	return kernel_ct_build(w->buf + at, w->cap - at, op, ff, timeout, w->build_opts, w->next_seq);
}

static int put_kind(struct kernel_writer *w, enum kernel_op op, const struct flow_full *ff,
		    const struct flow_exp *x, uint32_t timeout, uint64_t cookie, uint8_t kind)
{
	int len;

	if (w->nrec == w->maxrec)
		send_batch(w);
	len = build(w, w->len, op, ff, x, timeout);
	if (len == -ENOSPC && w->len) {
		send_batch(w);
		len = build(w, 0, op, ff, x, timeout);
	}
	if (len < 0) {
		struct req_rec r = { .cookie = cookie, .op = (uint8_t)((unsigned)op < KERNEL_OP_MAX ? op : 0),
				     .kind = kind };

		account(w, &r, len == -ENOSPC ? EMSGSIZE : EINVAL);
		return -EINVAL;
	}
	w->recs[w->nrec++] = (struct req_rec){ .cookie = cookie, .op = (uint8_t)op, .kind = kind };
	w->next_seq++;
	w->len += (size_t)len;
	return 0;
}

static int put_plain(struct kernel_writer *w, enum kernel_op op, const struct flow_full *ff,
		     const struct flow_exp *x, uint32_t timeout, uint64_t cookie)
{
	int err = put_kind(w, op, ff, x, timeout, cookie, REQ_PLAIN);

	/* Sent by before_sleep() at the end of this loop iteration. */
	if (!w->delivering && w->nerr)
		deliver(w);
	return err;
}

int kernel_writer_put(struct kernel_writer *w, enum kernel_op op, const struct flow_full *ff,
		      uint32_t timeout, uint64_t cookie)
{
	return put_plain(w, op, ff, NULL, timeout, cookie);
}

int kernel_writer_put_exp(struct kernel_writer *w, enum kernel_op op, const struct flow_exp *x,
			  uint32_t timeout, uint64_t cookie)
{
	return put_plain(w, op, NULL, x, timeout, cookie);
}

/* ---- jobs ---------------------------------------------------------------------- */

static void job_finish(struct kernel_writer *w)
{
	w->job.elapsed_us = nl_now_us() - w->job_start;
	w->job_active = false;
	if (w->done)
		w->done(w->job_arg, &w->job);
}

static void on_job_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct kernel_writer *w = arg;
	struct kernel_job_item it;

	(void)loop;
	for (unsigned i = 0; i < w->per_slice && w->job_active; i++) {
		it = (struct kernel_job_item){ 0 };
		if (!w->next(w->job_arg, &it)) {
			w->job_exhausted = true;
			break;
		}
		put_kind(w, it.op, it.ff, it.x, it.timeout, it.cookie, REQ_JOB);
		if (w->nerr)
			deliver(w);
	}
	if (!w->job_active)
		return;         /* cancelled from a callback */
	if (w->job_exhausted) {
		kernel_writer_flush(w);
		if (w->job_active)
			job_finish(w);
		return;
	}
	loop_timer_arm(t, 0);
}

int kernel_writer_run(struct kernel_writer *w, unsigned per_slice, kernel_job_next_fn next,
		      kernel_job_done_fn done, void *arg)
{
	if (w->job_active)
		return -EBUSY;
	if (!next)
		return -EINVAL;
	memset(&w->job, 0, sizeof(w->job));
	w->job_active = true;
	w->job_exhausted = false;
	w->per_slice = per_slice ? per_slice : DEFAULT_PER_SLICE;
	w->next = next;
	w->done = done;
	w->job_arg = arg;
	w->job_start = nl_now_us();
	loop_timer_arm(w->job_timer, 0);
	return 0;
}

void kernel_writer_cancel(struct kernel_writer *w)
{
	if (!w->job_active)
		return;
	w->job_active = false;
	loop_timer_disarm(w->job_timer);
	if (w->purge) {
		kernel_dump_cancel(w->purge);
		w->purge = NULL;
	}
}

bool kernel_writer_busy(const struct kernel_writer *w)
{
	return w->job_active;
}

/* ---- purge: dump + delete ---------------------------------------------------------- */

static void purge_on_flow(void *arg, const struct flow_full *ff)
{
	struct kernel_writer *w = arg;

	w->purge_seen++;
	if (w->keep && w->keep(w->job_arg, ff))
		return;
	put_kind(w, KERNEL_OP_DELETE, ff, NULL, 0, 0, REQ_PURGE);
}

static void purge_on_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct kernel_writer *w = arg;

	(void)st;
	w->purge = NULL;
	kernel_writer_flush(w);
	w->job.elapsed_us = nl_now_us() - w->job_start;
	w->job_active = false;
	/* An interrupted dump still deleted what it saw. */
	if (w->purge_done)
		w->purge_done(w->job_arg, err == -EINTR ? 0 : err, w->purge_seen, &w->job);
}

int kernel_writer_purge(struct kernel_writer *w, int family, kernel_keep_fn keep,
			kernel_purge_done_fn done, void *arg)
{
	static const struct kernel_dump_cb cb = { .on_flow = purge_on_flow, .on_done = purge_on_done };
	int err;

	if (w->job_active)
		return -EBUSY;
	memset(&w->job, 0, sizeof(w->job));
	w->keep = keep;
	w->purge_done = done;
	w->job_arg = arg;
	w->purge_seen = 0;
	w->done = NULL;
	w->job_start = nl_now_us();
	w->purge = kernel_dump_start(w->loop, family, 0, &cb, w, &err);
	if (!w->purge)
		return err;
	w->job_active = true;
	return 0;
}

/* ---- life -------------------------------------------------------------------------- */

void kernel_writer_set_build_opts(struct kernel_writer *w, unsigned build_opts)
{
	w->build_opts = build_opts;
}

struct kernel_writer *kernel_writer_new(struct loop *loop, const struct kernel_writer_opts *o,
					const struct kernel_writer_cb *cb, void *arg, int *err)
{
	struct kernel_writer *w = calloc(1, sizeof(*w));
	size_t batch = o && o->batch_bytes ? o->batch_bytes : DEFAULT_BATCH;
	uint32_t rcvbuf, want;
	int one = 1, e;

	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	if (batch < MIN_BATCH)
		batch = MIN_BATCH;
	w->loop = loop;
	w->cap = batch;
	w->maxrec = (unsigned)(batch / MIN_REQUEST);
	w->build_opts = o ? o->build_opts : 0;
	if (cb)
		w->cb = *cb;
	w->arg = arg;
	w->buf = malloc(batch);
	w->recs = calloc(w->maxrec, sizeof(*w->recs));
	w->job_timer = loop_timer_new(loop, on_job_timer, w);
	if (!w->buf || !w->recs || !w->job_timer || loop_flush_hook(loop, before_sleep, w) < 0) {
		e = -ENOMEM;
		goto fail;
	}
	if (!(w->nl = nl_open(0, &e)))
		goto fail;
	w->fd = mnl_socket_get_fd(w->nl);
	w->portid = mnl_socket_get_portid(w->nl);
	/* Errors carry only the failed request's header, not the whole request. */
	(void)setsockopt(w->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	/* netlink_sendmsg() refuses a message larger than the send buffer - 32. */
	if (nl_set_sndbuf(w->fd, (uint32_t)batch * 2) < batch + 64) {
		e = -ENOBUFS;
		log_error("kernel writer: cannot get a send buffer of %zu bytes", batch + 64);
		goto fail;
	}
	want = w->maxrec * ANSWER_TRUESIZE;
	rcvbuf = nl_set_rcvbuf(w->fd, want);
	if (rcvbuf < want) {
		/* Not allowed to force it: fewer requests per batch instead. */
		w->maxrec = rcvbuf / ANSWER_TRUESIZE;
		if (w->maxrec < 16) {
			e = -ENOBUFS;
			goto fail;
		}
	}
	for (unsigned i = 0; i < ANSWER_SLOTS; i++) {
		w->iov[i] = (struct iovec){ w->answers[i], ANSWER_SLOT_SIZE };
		w->msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &w->from[i], .msg_namelen = sizeof(w->from[i]),
			.msg_iov = &w->iov[i], .msg_iovlen = 1,
		};
	}
	w->next_seq = w->first_seq = (uint32_t)nl_now_us();
	*err = 0;
	return w;
fail:
	if (w->nl)
		mnl_socket_close(w->nl);
	loop_hook_remove(loop, before_sleep, w);
	loop_timer_free(w->job_timer);
	free(w->recs);
	free(w->buf);
	free(w);
	*err = e;
	return NULL;
}

void kernel_writer_free(struct kernel_writer *w)
{
	if (!w)
		return;
	kernel_writer_cancel(w);
	kernel_writer_flush(w);
	mnl_socket_close(w->nl);
	loop_hook_remove(w->loop, before_sleep, w);
	loop_timer_free(w->job_timer);
	free(w->errq);
	free(w->recs);
	free(w->buf);
	free(w);
}

uint32_t kernel_writer_portid(const struct kernel_writer *w)
{
	return w->portid;
}

void kernel_writer_get_stats(const struct kernel_writer *w, struct kernel_write_stats *st)
{
	*st = w->total;
}
