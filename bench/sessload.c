/*
 * sessload: short TCP sessions, as fast as they go, for bench/session-rate.sh.
 *
 *   sessload serve ADDR PORT
 *       accepts connections; each sends one line "SIZE\n" and gets SIZE
 *       bytes back; the server closes when the client has.  Runs until
 *       SIGTERM/SIGINT.
 *   sessload run ADDR PORT SIZE CONCURRENCY SECONDS [SRC_PREFIX SRC_COUNT]
 *       keeps CONCURRENCY sessions open: connect, send "SIZE\n", read SIZE
 *       bytes, close; the next starts at once.  The client closes first,
 *       so the TIME_WAIT is on its side, and connect() never picks a
 *       4-tuple that the server still holds in TIME_WAIT.  Sources are
 *       SRC_PREFIX.1 .. SRC_PREFIX.SRC_COUNT in turn (more source addresses,
 *       more 4-tuples).  Prints one JSON object: sessions, failures (by
 *       cause), sessions/s, and the p50/p90/p99 of the session time, from
 *       the connect() call to the last byte of the reply, in microseconds.
 *
 * One thread and epoll each: the kernel's work per session (the firewall's
 * conntrack, the daemons' events) is what is measured, not the tool's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE (16u << 20)

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int parse_u(const char *s, const char *what, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v > max) {
		fprintf(stderr, "sessload: %s wants a number up to %lu, not '%s'\n", what, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_addr(const char *a, const char *p, struct sockaddr_in *sa)
{
	unsigned long port;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, a, &sa->sin_addr) != 1) {
		fprintf(stderr, "sessload: '%s' is not an IPv4 address\n", a);
		return -1;
	}
	if (parse_u(p, "the port", 65535, &port) < 0 || port == 0)
		return -1;
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

/* ---------------------------------------------------------------- server */

struct sconn {
	struct sconn *prev, *next; /* every open connection, freed at exit */
	int fd;
	char line[32];
	size_t got;
	size_t left; /* bytes still to send, once the line is read */
	int sending;
	int draining; /* all sent: wait for the client's close */
};

static char payload[64 * 1024];
static struct sconn *sconns;

static void sconn_free(struct sconn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		sconns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	close(c->fd);
	free(c);
}

static int serve(const struct sockaddr_in *sa)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1, ep;
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(lfd, 4096) < 0) {
		perror("sessload: listen");
		return 1;
	}
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	memset(payload, 'x', sizeof(payload));
	fprintf(stderr, "sessload: serving\n");
	while (!stop) {
		struct epoll_event evs[256];
		int n = epoll_wait(ep, evs, 256, 200);
		for (int i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			if (c == NULL) {
				for (;;) {
					int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
					if (fd < 0)
						break;
					c = calloc(1, sizeof(*c));
					if (c == NULL) {
						close(fd);
						continue;
					}
					c->fd = fd;
					c->next = sconns;
					if (sconns != NULL)
						sconns->prev = c;
					sconns = c;
					struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
				}
				continue;
			}
			int done = 0;
			if (c->draining) {
				char sink[256];
				ssize_t r = read(c->fd, sink, sizeof(sink));
				done = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
			} else if (!c->sending) {
				ssize_t r = read(c->fd, c->line + c->got, sizeof(c->line) - 1 - c->got);
				if (r <= 0) {
					done = r == 0 || (errno != EAGAIN && errno != EINTR);
				} else {
					c->got += (size_t)r;
					c->line[c->got] = '\0';
					char *nl = strchr(c->line, '\n');
					if (nl != NULL) {
						*nl = '\0';
						unsigned long size;
						if (parse_u(c->line, "the request", MAX_SIZE, &size) < 0) {
							done = 1;
						} else {
							c->left = size;
							c->sending = 1;
							struct epoll_event ce = { .events = EPOLLOUT, .data.ptr = c };
							epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ce);
						}
					} else if (c->got >= sizeof(c->line) - 1) {
						done = 1;
					}
				}
			}
			if (c->sending && !c->draining && !done) {
				while (c->left > 0) {
					size_t k = c->left < sizeof(payload) ? c->left : sizeof(payload);
					ssize_t w = write(c->fd, payload, k);
					if (w < 0) {
						if (errno != EAGAIN && errno != EINTR)
							done = 1;
						break;
					}
					c->left -= (size_t)w;
				}
				if (c->left == 0) {
					c->draining = 1;
					struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ce);
				}
			}
			if (done)
				sconn_free(c);
		}
	}
	while (sconns != NULL)
		sconn_free(sconns);
	close(ep);
	close(lfd);
	return 0;
}

/* ---------------------------------------------------------------- client */

struct cconn {
	int fd;
	uint64_t t0;
	size_t want, got;
	int sent;
};

static uint64_t *times;
static size_t ntimes, captimes;
static unsigned long fail_connect, fail_short, fail_other;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int start_session(int ep, struct cconn *c, const struct sockaddr_in *dst, const struct sockaddr_in *src)
{
	int one = 1;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -1; /* c->fd is -1 */
	c->t0 = now_us();
	c->got = 0;
	c->sent = 0;
	if (src != NULL) {
		/* the port is chosen at connect(), per 4-tuple, not at bind() */
		setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (bind(c->fd, (const struct sockaddr *)src, sizeof(*src)) < 0) {
			close(c->fd);
			c->fd = -1;
			return -1;
		}
	}
	if (connect(c->fd, (const struct sockaddr *)dst, sizeof(*dst)) < 0 && errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static int run(const struct sockaddr_in *dst, unsigned long size, unsigned long conc, unsigned long secs,
	       const char *src_prefix, unsigned long nsrc)
{
	int ep = epoll_create1(0);
	struct cconn *cs = calloc(conc, sizeof(*cs));
	struct sockaddr_in *srcs = NULL;
	unsigned long next_src = 0;
	char buf[64 * 1024], req[32];
	int reqlen = snprintf(req, sizeof(req), "%lu\n", size);

	if (cs == NULL || ep < 0)
		return 1;
	if (nsrc > 0) {
		srcs = calloc(nsrc, sizeof(*srcs));
		if (srcs == NULL)
			return 1;
		for (unsigned long i = 0; i < nsrc; i++) {
			char a[64];
			snprintf(a, sizeof(a), "%s.%lu", src_prefix, i + 1);
			if (parse_addr(a, "1", &srcs[i]) < 0)
				return 2;
			srcs[i].sin_port = 0;
		}
	}
	captimes = 1 << 20;
	times = malloc(captimes * sizeof(*times));
	if (times == NULL)
		return 1;
	uint64_t start = now_us(), end = start + secs * 1000000u;
	for (unsigned long i = 0; i < conc; i++) {
		while (start_session(ep, &cs[i], dst, srcs ? &srcs[next_src++ % nsrc] : NULL) < 0) {
			fail_connect++;
			if (fail_connect > 1000) {
				fprintf(stderr, "sessload: cannot connect: %s\n", strerror(errno));
				return 1;
			}
		}
	}
	uint64_t now = start;
	while (now < end && !stop) {
		struct epoll_event evs[256];
		int n = epoll_wait(ep, evs, 256, 100);
		now = now_us();
		for (int i = 0; i < n; i++) {
			struct cconn *c = evs[i].data.ptr;
			int finished = 0, failed = 0;
			if (!c->sent) {
				int err = 0;
				socklen_t l = sizeof(err);
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err != 0 || write(c->fd, req, (size_t)reqlen) != reqlen) {
					fail_connect++;
					failed = 1;
				} else {
					c->sent = 1;
					struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				}
			} else {
				for (;;) {
					ssize_t r = read(c->fd, buf, sizeof(buf));
					if (r > 0) {
						c->got += (size_t)r;
						if (c->got >= size) {
							finished = c->got == size;
							if (!finished) {
								fail_short++;
								failed = 1;
							}
							break;
						}
						continue;
					}
					if (r == 0) {
						fail_short++;
						failed = 1;
					} else if (errno != EAGAIN && errno != EINTR) {
						fail_other++;
						failed = 1;
					}
					break;
				}
			}
			if (!finished && !failed)
				continue;
			if (finished) {
				if (ntimes == captimes) {
					uint64_t *t = realloc(times, 2 * captimes * sizeof(*times));
					if (t != NULL) {
						times = t;
						captimes *= 2;
					}
				}
				if (ntimes < captimes)
					times[ntimes++] = now_us() - c->t0;
			}
			close(c->fd);
			c->fd = -1;
			if (now >= end)
				continue;
			while (start_session(ep, c, dst, srcs ? &srcs[next_src++ % nsrc] : NULL) < 0) {
				fail_connect++;
				if (stop || now_us() >= end)
					break;
			}
		}
	}
	double el = (double)(now_us() - start) / 1e6;
	qsort(times, ntimes, sizeof(*times), cmp_u64);
#define Q(q) (ntimes ? times[(size_t)((double)(ntimes - 1) * (q))] : 0)
	printf("{\"size\":%lu,\"concurrency\":%lu,\"seconds\":%.3f,\"sessions\":%zu,\"sessions_per_s\":%.1f,"
	       "\"p50_us\":%llu,\"p90_us\":%llu,\"p99_us\":%llu,\"failed_connect\":%lu,\"failed_short\":%lu,"
	       "\"failed_other\":%lu}\n",
	       size, conc, el, ntimes, (double)ntimes / el, (unsigned long long)Q(0.5), (unsigned long long)Q(0.9),
	       (unsigned long long)Q(0.99), fail_connect, fail_short, fail_other);
	fflush(stdout);
	for (unsigned long i = 0; i < conc; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
	free(srcs);
	free(times);
	close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	struct sigaction act = { .sa_handler = on_signal };
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 4 && strcmp(argv[1], "serve") == 0) {
		if (parse_addr(argv[2], argv[3], &sa) < 0)
			return 2;
		return serve(&sa);
	}
	if ((argc == 7 || argc == 9) && strcmp(argv[1], "run") == 0) {
		unsigned long size, conc, secs, nsrc = 0;
		if (parse_addr(argv[2], argv[3], &sa) < 0 || parse_u(argv[4], "SIZE", MAX_SIZE, &size) < 0 ||
		    parse_u(argv[5], "CONCURRENCY", 10000, &conc) < 0 || parse_u(argv[6], "SECONDS", 3600, &secs) < 0)
			return 2;
		if (size == 0 || conc == 0 || secs == 0) {
			fprintf(stderr, "sessload: SIZE, CONCURRENCY and SECONDS must be at least 1\n");
			return 2;
		}
		if (argc == 9 && (parse_u(argv[8], "SRC_COUNT", 254, &nsrc) < 0 || nsrc == 0))
			return 2;
		return run(&sa, size, conc, secs, argc == 9 ? argv[7] : NULL, nsrc);
	}
	fprintf(stderr, "usage: sessload serve ADDR PORT\n"
			"       sessload run ADDR PORT SIZE CONCURRENCY SECONDS [SRC_PREFIX SRC_COUNT]\n");
	return 2;
}
