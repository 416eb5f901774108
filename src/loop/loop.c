/*
 * loop.c - epoll event loop with a timer heap, signalfd and before-sleep hooks.
 */
#include "loop/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

struct fd_slot {
	unsigned mask;
	loop_fd_fn fn;
	void *arg;
};

struct loop_timer {
	struct loop *loop;
	uint64_t deadline;
	size_t heap_index;        /* SIZE_MAX while disarmed */
	loop_timer_fn fn;
	void *arg;
};

struct hook {
	loop_hook_fn fn;
	void *arg;
	bool flush;               /* runs after every other hook (loop_flush_hook) */
};

struct signal_slot {
	loop_signal_fn fn;
	void *arg;
};

#define MAX_SIGNO 65
#define EVENTS_PER_WAIT 64

struct loop {
	int epfd;
	int sigfd;
	sigset_t sigmask;
	struct fd_slot *fds;
	size_t nfds;
	struct loop_timer **heap;
	size_t heap_len, heap_cap;
	size_t ntimers;           /* live timers: heap_cap never falls below this */
	struct hook *hooks;
	size_t nhooks;
	struct signal_slot signals[MAX_SIGNO];
	uint64_t now;
	bool stop;
	bool wake;                /* loop_wake(): the coming wait does not block */
};

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct loop *loop_new(void)
{
	struct loop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		free(loop);
		return NULL;
	}
	loop->sigfd = -1;
	sigemptyset(&loop->sigmask);
	loop->now = monotonic_ms();
	return loop;
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	for (size_t i = 0; i < loop->heap_len; i++)
		loop->heap[i]->heap_index = SIZE_MAX;
	if (loop->sigfd >= 0) {
		close(loop->sigfd);
		sigprocmask(SIG_UNBLOCK, &loop->sigmask, NULL);
	}
	close(loop->epfd);
	free(loop->fds);
	free(loop->heap);
	free(loop->hooks);
	free(loop);
}

static int grow_fds(struct loop *loop, int fd)
{
	size_t n = loop->nfds ? loop->nfds : 64;
	struct fd_slot *fds;

	while (n <= (size_t)fd)
		n *= 2;
	fds = realloc(loop->fds, n * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	memset(fds + loop->nfds, 0, (n - loop->nfds) * sizeof(*fds));
	loop->fds = fds;
	loop->nfds = n;
	return 0;
}

int loop_watch(struct loop *loop, int fd, unsigned events, loop_fd_fn fn, void *arg)
{
	struct epoll_event ev = { .data.fd = fd };
	int op;

	if (fd < 0 || !fn || !(events & (LOOP_READ | LOOP_WRITE)))
		return -EINVAL;
	if ((size_t)fd >= loop->nfds && grow_fds(loop, fd) < 0)
		return -ENOMEM;
	if (events & LOOP_READ)
		ev.events |= EPOLLIN;
	if (events & LOOP_WRITE)
		ev.events |= EPOLLOUT;
	op = loop->fds[fd].mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(loop->epfd, op, fd, &ev) < 0)
		return -errno;
	loop->fds[fd] = (struct fd_slot){ .mask = events, .fn = fn, .arg = arg };
	return 0;
}

void loop_unwatch(struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->nfds || !loop->fds[fd].mask)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	loop->fds[fd] = (struct fd_slot){ 0 };
}

/* Timer heap: a binary min-heap on deadline; each timer knows its index. */

static void heap_swap(struct loop *loop, size_t a, size_t b)
{
	struct loop_timer *t = loop->heap[a];

	loop->heap[a] = loop->heap[b];
	loop->heap[b] = t;
	loop->heap[a]->heap_index = a;
	loop->heap[b]->heap_index = b;
}

static void heap_up(struct loop *loop, size_t i)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (loop->heap[parent]->deadline <= loop->heap[i]->deadline)
			break;
		heap_swap(loop, i, parent);
		i = parent;
	}
}

static void heap_down(struct loop *loop, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;

		if (l < loop->heap_len && loop->heap[l]->deadline < loop->heap[min]->deadline)
			min = l;
		if (r < loop->heap_len && loop->heap[r]->deadline < loop->heap[min]->deadline)
			min = r;
		if (min == i)
			break;
		heap_swap(loop, i, min);
		i = min;
	}
}

static void heap_remove(struct loop *loop, struct loop_timer *t)
{
	size_t i = t->heap_index, last = loop->heap_len - 1;

	if (i != last) {
		heap_swap(loop, i, last);
		loop->heap_len--;
		heap_down(loop, i);
		heap_up(loop, i);
	} else {
		loop->heap_len--;
	}
	t->heap_index = SIZE_MAX;
}

struct loop_timer *loop_timer_new(struct loop *loop, loop_timer_fn fn, void *arg)
{
	struct loop_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* Reserve heap room now, so that arming can never fail. */
	if (loop->heap_cap <= loop->ntimers) {
		size_t cap = loop->heap_cap ? loop->heap_cap * 2 : 8;
		struct loop_timer **h = realloc(loop->heap, cap * sizeof(*h));

		if (!h) {
			free(t);
			return NULL;
		}
		loop->heap = h;
		loop->heap_cap = cap;
	}
	loop->ntimers++;
	t->loop = loop;
	t->heap_index = SIZE_MAX;
	t->fn = fn;
	t->arg = arg;
	return t;
}

void loop_timer_arm(struct loop_timer *t, uint64_t ms)
{
	struct loop *loop = t->loop;

	t->deadline = loop->now + ms;
	if (t->heap_index != SIZE_MAX) {
		heap_down(loop, t->heap_index);
		heap_up(loop, t->heap_index);
		return;
	}
	/*
	 * loop_timer_new() keeps heap_cap above the number of live timers,
	 * so there is always room here.
	 */
	t->heap_index = loop->heap_len;
	loop->heap[loop->heap_len++] = t;
	heap_up(loop, t->heap_index);
}

void loop_timer_disarm(struct loop_timer *t)
{
	if (t->heap_index != SIZE_MAX)
		heap_remove(t->loop, t);
}

bool loop_timer_armed(const struct loop_timer *t)
{
	return t->heap_index != SIZE_MAX;
}

void loop_timer_free(struct loop_timer *t)
{
	if (!t)
		return;
	loop_timer_disarm(t);
	t->loop->ntimers--;
	free(t);
}

static void on_signalfd(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo < MAX_SIGNO && loop->signals[si.ssi_signo].fn)
			loop->signals[si.ssi_signo].fn(loop, (int)si.ssi_signo,
							loop->signals[si.ssi_signo].arg);
	}
}

int loop_signal(struct loop *loop, int signo, loop_signal_fn fn, void *arg)
{
	int fd;

	if (signo <= 0 || signo >= MAX_SIGNO)
		return -EINVAL;
	sigaddset(&loop->sigmask, signo);
	if (sigprocmask(SIG_BLOCK, &loop->sigmask, NULL) < 0)
		return -errno;
	fd = signalfd(loop->sigfd, &loop->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (loop->sigfd < 0) {
		int err = loop_watch(loop, fd, LOOP_READ, on_signalfd, NULL);

		if (err < 0) {
			close(fd);
			return err;
		}
		loop->sigfd = fd;
	}
	loop->signals[signo] = (struct signal_slot){ .fn = fn, .arg = arg };
	return 0;
}

static int add_hook(struct loop *loop, loop_hook_fn fn, void *arg, bool flush)
{
	struct hook *h = realloc(loop->hooks, (loop->nhooks + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	loop->hooks = h;
	loop->hooks[loop->nhooks++] = (struct hook){ .fn = fn, .arg = arg, .flush = flush };
	return 0;
}

int loop_before_sleep(struct loop *loop, loop_hook_fn fn, void *arg)
{
	return add_hook(loop, fn, arg, false);
}

int loop_flush_hook(struct loop *loop, loop_hook_fn fn, void *arg)
{
	return add_hook(loop, fn, arg, true);
}

void loop_hook_remove(struct loop *loop, loop_hook_fn fn, void *arg)
{
	for (size_t i = 0; i < loop->nhooks; i++) {
		if (loop->hooks[i].fn != fn || loop->hooks[i].arg != arg)
			continue;
		memmove(&loop->hooks[i], &loop->hooks[i + 1], (loop->nhooks - i - 1) * sizeof(loop->hooks[0]));
		loop->nhooks--;
		return;
	}
}

void loop_wake(struct loop *loop)
{
	loop->wake = true;
}

static void run_hooks(struct loop *loop, bool flush)
{
	/* By index: a hook may remove itself (or add one, which runs next time). */
	for (size_t i = 0; i < loop->nhooks; i++) {
		struct hook h = loop->hooks[i];

		if (h.flush != flush)
			continue;
		h.fn(loop, h.arg);
		if (i < loop->nhooks && (loop->hooks[i].fn != h.fn || loop->hooks[i].arg != h.arg))
			i--;    /* it removed itself: the next one moved into its place */
	}
}

uint64_t loop_now_ms(const struct loop *loop)
{
	return loop->now;
}

static void run_timers(struct loop *loop)
{
	/* Bounded: a timer re-armed with 0 ms runs on the next iteration, not now. */
	size_t budget = loop->heap_len;

	while (budget-- > 0 && loop->heap_len > 0 && loop->heap[0]->deadline <= loop->now) {
		struct loop_timer *t = loop->heap[0];

		heap_remove(loop, t);
		t->fn(loop, t, t->arg);
	}
}

int loop_run_once(struct loop *loop, int max_wait_ms)
{
	struct epoll_event events[EVENTS_PER_WAIT];
	int timeout = max_wait_ms, n;

	run_hooks(loop, false);
	run_hooks(loop, true);
	if (loop->stop)
		return 0;

	loop->now = monotonic_ms();
	if (loop->heap_len > 0) {
		uint64_t next = loop->heap[0]->deadline;
		uint64_t wait = next > loop->now ? next - loop->now : 0;

		if (timeout < 0 || wait < (uint64_t)timeout)
			timeout = (int)(wait > 60000 ? 60000 : wait);
	}
	if (loop->wake) {
		loop->wake = false;
		timeout = 0;
	}

	n = epoll_wait(loop->epfd, events, EVENTS_PER_WAIT, timeout);
	if (n < 0) {
		if (errno == EINTR)
			n = 0;
		else
			return -errno;
	}
	loop->now = monotonic_ms();

	for (int i = 0; i < n; i++) {
		int fd = events[i].data.fd;
		unsigned got = 0;
		struct fd_slot *slot;

		if ((size_t)fd >= loop->nfds)
			continue;
		slot = &loop->fds[fd];
		if (!slot->mask)
			continue;	/* unwatched by an earlier callback of this batch */
		if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			got |= LOOP_READ;
		if (events[i].events & (EPOLLOUT | EPOLLERR))
			got |= LOOP_WRITE;
		got &= slot->mask | ((events[i].events & (EPOLLHUP | EPOLLERR)) ? LOOP_READ : 0);
		if (got)
			slot->fn(loop, fd, got, slot->arg);
	}
	run_timers(loop);
	return 0;
}

int loop_run(struct loop *loop)
{
	loop->stop = false;
	while (!loop->stop) {
		int err = loop_run_once(loop, -1);

		if (err < 0)
			return err;
	}
	return 0;
}

void loop_stop(struct loop *loop)
{
	loop->stop = true;
}
