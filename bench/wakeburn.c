/*
 * wakeburn: how well this kernel accounts the CPU time of a task that is
 * woken often, as the backup daemon is.
 *
 *   wakeburn CPU [WAKEUPS [ITERATIONS [INTERVAL_US]]]
 *
 * The program binds itself to CPU, and a child to the other CPUs it may
 * use.  The child sends WAKEUPS datagrams (default 500), one every
 * INTERVAL_US microseconds (2000), over a socket pair; the parent sleeps
 * in recv() and, on
 * each datagram, runs ITERATIONS rounds of integer arithmetic (20000).  The same
 * work done in one go, before, gives its cost (the "work").  The parent
 * then prints one JSON line with three figures for the woken phase, in
 * milliseconds: the work, its own task clock (perf_event_open, the time
 * between its switches in and out) and its scheduler runtime
 * (CLOCK_THREAD_CPUTIME_ID, which is se.sum_exec_runtime).
 *
 * Alone on a CPU the three agree, give or take the cost of recv().  Run
 * beside a process that spends long stretches in system calls on the same
 * CPU (bench/compare.sh runs it next to `ctload create`), a kernel that does
 * not preempt kernel code may charge the woken task's scheduler runtime
 * with the time it waited for the CPU; the task clock does not.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static void work(long iterations)
{
	uint64_t x = 1;

	for (long i = 0; i < iterations; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double task_clock_ms(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -1;
	return v / 1e6;
}

static long arg(int argc, char **argv, int i, long def, long min, long max)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	errno = 0;
	v = strtol(argv[i], &end, 10);
	if (errno || *end || end == argv[i] || v < min || v > max) {
		fprintf(stderr, "wakeburn: '%s' is not a number from %ld to %ld\n", argv[i], min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long wakeups, iterations, interval, cpu;
	cpu_set_t allowed, mine;
	struct perf_event_attr attr;
	double w0, w1, c0, c1, t0, t1;
	int sv[2], fd, status;
	char byte;
	pid_t child;

	if (argc < 2) {
		fprintf(stderr, "usage: wakeburn CPU [WAKEUPS [ITERATIONS [INTERVAL_US]]]\n");
		return 2;
	}
	cpu = arg(argc, argv, 1, 0, 0, CPU_SETSIZE - 1);
	wakeups = arg(argc, argv, 2, 500, 1, 1000000);
	iterations = arg(argc, argv, 3, 20000, 1, 100000000);
	interval = arg(argc, argv, 4, 2000, 1, 1000000);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
		perror("wakeburn: sched_getaffinity");
		return 1;
	}
	if (!CPU_ISSET(cpu, &allowed)) {
		fprintf(stderr, "wakeburn: CPU %ld is not one this process may use\n", cpu);
		return 2;
	}
	CPU_ZERO(&mine);
	CPU_SET(cpu, &mine);
	if (sched_setaffinity(0, sizeof(mine), &mine) < 0) {
		perror("wakeburn: sched_setaffinity");
		return 1;
	}
	if (CPU_COUNT(&allowed) > 1)
		CPU_CLR(cpu, &allowed);
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0) {
		perror("wakeburn: socketpair");
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		fprintf(stderr, "wakeburn: task clock: %s\n", strerror(errno));
		return 1;
	}

	w0 = thread_cpu_ms();
	for (long i = 0; i < wakeups; i++)
		work(iterations);
	w1 = thread_cpu_ms();

	child = fork();
	if (child < 0) {
		perror("wakeburn: fork");
		return 1;
	}
	if (child == 0) {
		struct timespec gap = { interval / 1000000, (interval % 1000000) * 1000 };

		close(sv[0]);
		if (sched_setaffinity(0, sizeof(allowed), &allowed) < 0)
			_exit(1);
		for (long i = 0; i < wakeups; i++) {
			if (send(sv[1], "w", 1, 0) < 0)
				_exit(1);
			nanosleep(&gap, NULL);
		}
		_exit(0);
	}
	close(sv[1]);
	c0 = thread_cpu_ms();
	t0 = task_clock_ms(fd);
	for (long i = 0; i < wakeups; i++) {
		if (recv(sv[0], &byte, 1, 0) != 1) {
			fprintf(stderr, "wakeburn: recv: %s\n", strerror(errno));
			kill(child, SIGTERM);
			waitpid(child, &status, 0);
			return 1;
		}
		work(iterations);
	}
	c1 = thread_cpu_ms();
	t1 = task_clock_ms(fd);
	waitpid(child, &status, 0);
	printf("{\"wakeups\":%ld,\"work_ms\":%.3f,\"task_clock_ms\":%.3f,\"sched_runtime_ms\":%.3f}\n",
	       wakeups, w1 - w0, t1 - t0, c1 - c0);
	return 0;
}
