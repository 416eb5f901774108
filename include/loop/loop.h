/*
 * loop/loop.h - the single epoll event loop (in the manner of Redis's ae.c).
 *
 * File events are indexed by fd, timers by an opaque handle, and signals
 * arrive through a signalfd so that handlers run on the loop, never in
 * signal context.  Before-sleep hooks run once per iteration, just before
 * the loop blocks: that is the one place where batched output (datagrams,
 * netlink batches, control replies) is flushed.
 */
#ifndef CTSYNCD_LOOP_H
#define CTSYNCD_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct loop_timer;

#define LOOP_READ  0x1u
#define LOOP_WRITE 0x2u

typedef void (*loop_fd_fn)(struct loop *loop, int fd, unsigned events, void *arg);
typedef void (*loop_timer_fn)(struct loop *loop, struct loop_timer *timer, void *arg);
typedef void (*loop_signal_fn)(struct loop *loop, int signo, void *arg);
typedef void (*loop_hook_fn)(struct loop *loop, void *arg);

/* Returns NULL with errno set on failure. */
struct loop *loop_new(void);
/* Closes the epoll and signal fds; does not close registered fds. */
void loop_free(struct loop *loop);

/*
 * Watch `fd` for LOOP_READ and/or LOOP_WRITE.  Calling it again for the
 * same fd replaces the mask, callback and argument.  Returns 0 or -errno.
 */
int loop_watch(struct loop *loop, int fd, unsigned events, loop_fd_fn fn, void *arg);
/* Stop watching `fd` (safe from inside that fd's own callback). */
void loop_unwatch(struct loop *loop, int fd);

/* A timer, disarmed until loop_timer_arm().  Returns NULL on ENOMEM. */
struct loop_timer *loop_timer_new(struct loop *loop, loop_timer_fn fn, void *arg);
/* Fire once, `ms` milliseconds from now (re-arming replaces the deadline). */
void loop_timer_arm(struct loop_timer *timer, uint64_t ms);
void loop_timer_disarm(struct loop_timer *timer);
bool loop_timer_armed(const struct loop_timer *timer);
/* Disarm and free; safe from inside the timer's own callback. */
void loop_timer_free(struct loop_timer *timer);

/* Deliver `signo` to `fn` on the loop; the signal is blocked for the process. */
int loop_signal(struct loop *loop, int signo, loop_signal_fn fn, void *arg);

/* Run `fn` before every sleep, in registration order. */
int loop_before_sleep(struct loop *loop, loop_hook_fn fn, void *arg);
/*
 * Run `fn` before every sleep after all loop_before_sleep() hooks: the
 * place for a sink that other hooks may still fill (the netlink writer).
 */
int loop_flush_hook(struct loop *loop, loop_hook_fn fn, void *arg);
/* Remove the hook registered with `fn` and `arg` (safe from inside it). */
void loop_hook_remove(struct loop *loop, loop_hook_fn fn, void *arg);
/*
 * The coming wait returns at once: for a hook that still has output after
 * its flush (more was queued meanwhile) and must run again without sleeping.
 */
void loop_wake(struct loop *loop);

/* Monotonic time in milliseconds, as the loop sees it (cached per iteration). */
uint64_t loop_now_ms(const struct loop *loop);

/*
 * Run until loop_stop().  Returns 0 after a stop, or -errno if epoll
 * itself failed.
 */
int loop_run(struct loop *loop);
/* One iteration: wait at most `max_wait_ms` (-1 = until an event). For tests. */
int loop_run_once(struct loop *loop, int max_wait_ms);
void loop_stop(struct loop *loop);

#endif
