/*
 * table-bench.c - micro-benchmark of the flow table: insert, lookup,
 * update, iterate, delete, with the table's own memory accounting and the
 * process's RSS growth.  Not part of the suite; build it on demand:
 *
 *	make bench/table-bench && bench/table-bench [states [user_bytes]]
 *
 * Keys are distinct IPv4 TCP tuples visited in a shuffled order, so the
 * index and the arena are accessed as randomly as kernel events would.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "flow/flow.h"
#include "flow/table.h"

#define BATCH 16

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void key_of(struct flow_full *ff, uint32_t i)
{
	ff->flow.orig.src.v4 = htonl(0x0a000000u | (i >> 16));
	ff->flow.orig.dst.v4 = htonl(0xc0a80001u + (i & 0xff));
	ff->flow.orig.l4.port.sport = htons((uint16_t)i);
}

static void report(const char *what, uint32_t n, double secs)
{
	printf("%-26s %9.0f ops/s  %6.1f ns/op\n", what, n / secs, secs * 1e9 / n);
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1000000;
	uint32_t user = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 16;
	struct flow_table_options o = { .buckets = 65536, .seed = 0x12345678, .user_bytes = user };
	struct flow_table *t;
	struct flow_full *ff = calloc(1, sizeof(*ff));
	struct flow_full *batch = calloc(BATCH, sizeof(*batch));
	uint32_t hash[BATCH];
	uint32_t *order = malloc(n * sizeof(*order)), h, cursor = 0, found = 0;
	uint64_t rng = 88172645463325252ull;
	long rss0, rss1;
	double t0;

	if (!ff || !batch || !order || flow_table_new(&o, &t) < 0)
		return 1;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j, tmp;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		j = (uint32_t)(rng % (i + 1));
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	ff->flow.orig.family = AF_INET;
	ff->flow.orig.l4proto = IPPROTO_TCP;
	ff->flow.orig.l4.port.dport = htons(443);
	ff->flow.attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_PROTO_STATE;
	ff->flow.status = 0x0e;
	ff->flow.timeout = 432000;
	ff->flow.proto_state = 3;

	for (uint32_t j = 0; j < BATCH; j++)
		batch[j] = *ff;
	rss0 = rss_kib();
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		key_of(ff, order[i]);
		if (flow_table_upsert(t, ff, 1, &h) != FLOW_UPSERT_INSERTED)
			return 2;
	}
	report("insert (with growth)", n, now_s() - t0);
	rss1 = rss_kib();

	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		key_of(ff, order[n - 1 - i]);
		found += flow_table_lookup(t, &ff->flow.orig) != 0;
	}
	report("lookup hit", n, now_s() - t0);

	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		key_of(ff, order[i] + n);
		found += flow_table_lookup(t, &ff->flow.orig) != 0;
	}
	report("lookup miss", n, now_s() - t0);

	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		key_of(ff, order[i]);
		ff->flow.timeout = 431999;
		if (flow_table_upsert(t, ff, 2, &h) != FLOW_UPSERT_UPDATED)
			return 3;
	}
	report("upsert (update)", n, now_s() - t0);

	/* The same, in batches of 16 with prefetch, as after one netlink read. */
	t0 = now_s();
	for (uint32_t i = 0; i < n; i += BATCH) {
		uint32_t m = n - i < BATCH ? n - i : BATCH;

		for (uint32_t j = 0; j < m; j++) {
			key_of(&batch[j], order[i + j]);
			hash[j] = flow_table_hash(t, &batch[j].flow.orig);
			flow_table_prefetch(t, hash[j]);
		}
		for (uint32_t j = 0; j < m; j++)
			found += flow_table_lookup_hashed(t, &batch[j].flow.orig, hash[j]) != 0;
	}
	report("lookup hit, batched", n, now_s() - t0);

	t0 = now_s();
	for (uint32_t i = 0; i < n; i += BATCH) {
		uint32_t m = n - i < BATCH ? n - i : BATCH;

		for (uint32_t j = 0; j < m; j++) {
			key_of(&batch[j], order[n - 1 - i - j]);
			batch[j].flow.timeout = 431998;
			hash[j] = flow_table_hash(t, &batch[j].flow.orig);
			flow_table_prefetch(t, hash[j]);
		}
		for (uint32_t j = 0; j < m; j++) {
			int r = flow_table_upsert_hashed(t, &batch[j], hash[j], 3, &h);

			if (r != FLOW_UPSERT_UPDATED)
				return 3;
		}
	}
	report("upsert (update), batched", n, now_s() - t0);

	t0 = now_s();
	while ((h = flow_table_next(t, &cursor)) != 0)
		found += flow_table_flow(t, h)->timeout == 431998;
	report("iterate", n, now_s() - t0);

	printf("states %u, user area %u B: table accounts %zu B = %.1f B/state; "
	       "RSS grew %ld KiB = %.1f B/state during the inserts\n",
	       n, user, flow_table_memory(t), (double)flow_table_memory(t) / n,
	       rss1 - rss0, (rss1 - rss0) * 1024.0 / n);

	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		key_of(ff, order[i]);
		if (flow_table_delete(t, flow_table_lookup(t, &ff->flow.orig)) != 0)
			return 4;
	}
	report("lookup + delete", n, now_s() - t0);

	/* Steady state: churn at the same size, which must not allocate. */
	for (uint32_t i = 0; i < n / 2; i++) {
		key_of(ff, order[i]);
		flow_table_upsert(t, ff, 3, &h);
	}
	t0 = now_s();
	for (uint32_t i = 0; i < n / 2; i++) {
		key_of(ff, order[i]);
		flow_table_delete(t, flow_table_lookup(t, &ff->flow.orig));
		key_of(ff, order[i + n / 2]);
		flow_table_upsert(t, ff, 4, &h);
	}
	report("churn (delete+insert)", n / 2, now_s() - t0);

	printf("(checksum %u)\n", found);
	flow_table_free(t);
	free(order);
	free(batch);
	free(ff);
	return 0;
}
