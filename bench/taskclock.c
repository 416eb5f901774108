/*
 * taskclock: the CPU time of running processes, by the kernel's task clock.
 *
 *   taskclock PID...
 *
 * Opens one software task-clock counter (perf_event_open) on every thread
 * of each PID, inherited by the threads and children they start later, and
 * prints "ready".  Then, for each line read on standard input, it prints
 * one line: the CPU seconds of each PID (the sum over its threads and
 * children) since the counters were opened, in the order given.  It exits
 * at the end of its input.
 *
 * Why not se.sum_exec_runtime (/proc/PID/task/TID/sched, or
 * CLOCK_PROCESS_CPUTIME_ID, which reads it): on a kernel that does not
 * preempt kernel code (PREEMPT_NONE), a task woken while another one runs
 * a long system call waits for it, and the scheduler may charge the woken
 * task with that wait.  The task clock counts only the time between the
 * task's switch in and its switch out.  doc/benchmarks.md has the
 * measurement that showed the difference.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_COUNTERS 4096

struct counter {
	int fd;
	int proc;	/* index into the PID arguments */
};

static struct counter counters[MAX_COUNTERS];
static int ncounters;

static int open_counter(pid_t tid)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.inherit = 1;
	return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0);
}

/* Counters on every thread of PID; -1 with a message on failure. */
static int watch(const char *arg, int proc)
{
	char path[64], *end;
	struct dirent *de;
	long pid;
	DIR *dir;
	int n = 0;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || *end || end == arg || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "taskclock: '%s' is not a process ID\n", arg);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "taskclock: process %ld: %s\n", pid, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir))) {
		long tid = strtol(de->d_name, &end, 10);
		int fd;

		if (*end || tid <= 0)
			continue;
		if (ncounters == MAX_COUNTERS) {
			fprintf(stderr, "taskclock: more than %d threads\n", MAX_COUNTERS);
			closedir(dir);
			return -1;
		}
		fd = open_counter((pid_t)tid);
		if (fd < 0) {
			if (errno == ESRCH)	/* the thread has just exited */
				continue;
			fprintf(stderr, "taskclock: task clock of thread %ld of process %ld: %s\n",
				tid, pid, strerror(errno));
			closedir(dir);
			return -1;
		}
		counters[ncounters].fd = fd;
		counters[ncounters].proc = proc;
		ncounters++;
		n++;
	}
	closedir(dir);
	if (n == 0) {
		fprintf(stderr, "taskclock: process %ld has no thread left\n", pid);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t *ns;
	char line[256];
	int nproc = argc - 1;

	if (nproc < 1) {
		fprintf(stderr, "usage: taskclock PID...\n");
		return 2;
	}
	for (int i = 0; i < nproc; i++)
		if (watch(argv[i + 1], i) < 0)
			return 1;
	ns = calloc((size_t)nproc, sizeof(*ns));
	if (!ns)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		memset(ns, 0, (size_t)nproc * sizeof(*ns));
		for (int i = 0; i < ncounters; i++) {
			uint64_t v;

			/* a thread that exited keeps its last count */
			if (read(counters[i].fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
				ns[counters[i].proc] += v;
		}
		for (int i = 0; i < nproc; i++)
			printf("%s%.9f", i ? " " : "", (double)ns[i] / 1e9);
		printf("\n");
	}
	free(ns);
	return 0;
}
