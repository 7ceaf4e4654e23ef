/*
 * rcmp-kv: the key-value store of Rcmp §6.4 (a hash table of 64 B items under YCSB) over
 * two memories with the same network delays, for Fig. 17's comparison:
 *
 *   rcmp-kv --backend=rcmp  --items=N --ops=FILE [--racks=2 --hot-threshold=4 ...]
 *       the table lives in librcmp's global memory (rcmp.h): interleaved over the racks'
 *       pools (§6.3), each slot read/written with rcmp_read/rcmp_write (CXL in this rack,
 *       the SWAPDEV_* model across racks);
 *   LD_PRELOAD=libswapdev_uffd.so SWAPDEV_LOCAL_BYTES=... rcmp-kv --backend=pages ...
 *       the table is one anonymous mapping, paged at 4 KiB by the uffd device with the
 *       same SWAPDEV_* model (page-level remote memory, Fastswap's class: §3.1, Table 3).
 *
 * Each rack's pool holds its share of the table's pages (interleaved) plus
 * --rack-free-pages free ones (0: a hot page comes in only in exchange for a victim).
 * The table: 2N slots of 64 B (an 8 B key + 56 B value), open addressing with linear
 * probing from fnv1a64(key) % slots; loaded with keys 0..N-1 before the clock starts.
 * FILE holds one access per line, "<client> <R|W> <key>", as sim/rcmp.py's RCMP_ACCESSES
 * (client_host, op, key), clients numbered 1..T (thread i replays client i+1's lines in
 * order): R looks the key up, W finds its slot (or the first empty one: an insert) and
 * writes the value.  With --direct=1 there is no hashing: item k is slot k and each line
 * is one 64 B read or write of it (the random read/write micro-benchmark, §6.3).  Prints one JSON line: accesses, seconds, accesses per second, mean,
 * median and 99th-percentile latency per access (wall clock, sd_hist buckets), probes,
 * and librcmp's counters for the run (the pre-load's subtracted).
 */
#define _GNU_SOURCE
#include "rcmp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../core/sd_delay.h"

#define SLOT 64u

struct op {
	uint64_t key;
	int is_write;
};

struct client {
	struct op *ops;
	size_t n, cap;
	uint64_t probes, missing;
	struct sd_hist lat; /* per-access latency, ns */
	pthread_t th;
};

static struct rcmp_pool *pool;
static rcmp_gaddr *page_addr; /* rcmp: the table's pages, in order */
static uint8_t *table;        /* pages */
static uint64_t slots;
static uint64_t slots_per_page;
static int direct; /* --direct: item k is slot k, one access (the §6.3 micro-benchmark) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv1a64(uint64_t v)
{
	uint64_t h = 0xCBF29CE484222325ull;
	int i;

	for (i = 0; i < 8; i++) {
		h ^= v & 0xff;
		h *= 1099511628211ull;
		v >>= 8;
	}
	return h;
}

static void slot_read(uint64_t s, uint8_t *buf)
{
	if (pool)
		rcmp_read(pool, page_addr[s / slots_per_page] + (s % slots_per_page) * SLOT, SLOT,
			  buf);
	else
		memcpy(buf, table + s * SLOT, SLOT);
}

static void slot_write(uint64_t s, const uint8_t *buf)
{
	if (pool)
		rcmp_write(pool, page_addr[s / slots_per_page] + (s % slots_per_page) * SLOT, SLOT,
			   buf);
	else
		memcpy(table + s * SLOT, buf, SLOT);
}

/* Key k is stored as k + 1 (0 marks an empty slot). */
static void *run_client(void *arg)
{
	struct client *c = arg;
	uint8_t buf[SLOT];
	size_t i;

	sd_hist_init(&c->lat);
	for (i = 0; i < c->n; i++) {
		uint64_t k = c->ops[i].key + 1, s = fnv1a64(c->ops[i].key) % slots, stored;
		uint64_t tries = 0, start = now_ns();

		if (direct) {
			s = c->ops[i].key % slots;
			if (c->ops[i].is_write) {
				memset(buf, (int)(i & 0xff), SLOT);
				slot_write(s, buf);
			} else {
				slot_read(s, buf);
			}
			c->probes++;
			sd_hist_add(&c->lat, now_ns() - start);
			continue;
		}

		for (;;) {
			slot_read(s, buf);
			c->probes++;
			memcpy(&stored, buf, 8);
			if (stored == k || stored == 0 || ++tries == slots)
				break;
			s = (s + 1) % slots;
		}
		if (c->ops[i].is_write) {
			memcpy(buf, &k, 8);
			memset(buf + 8, (int)(i & 0xff), SLOT - 8);
			slot_write(s, buf);
		} else if (stored != k) {
			c->missing++;
		}
		sd_hist_add(&c->lat, now_ns() - start);
	}
	return NULL;
}

static int load_ops(const char *path, struct client *cl, int threads)
{
	FILE *f = fopen(path, "r");
	char line[128];
	unsigned long lineno = 0;

	if (!f) {
		fprintf(stderr, "rcmp-kv: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long client;
		unsigned long long key;
		char op;
		struct client *c;

		lineno++;
		if (sscanf(line, "%lu %c %llu", &client, &op, &key) != 3 || (op != 'R' && op != 'W') ||
		    client < 1 || client > (unsigned long)threads) {
			fprintf(stderr,
				"rcmp-kv: %s:%lu: expected \"<client 1..%d> <R|W> <key>\", got %s",
				path, lineno, threads, line);
			fclose(f);
			return -1;
		}
		c = &cl[client - 1];
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 4096;
			c->ops = realloc(c->ops, c->cap * sizeof(*c->ops));
			if (!c->ops) {
				fclose(f);
				return -1;
			}
		}
		c->ops[c->n].key = key;
		c->ops[c->n].is_write = op == 'W';
		c->n++;
	}
	fclose(f);
	return 0;
}

static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
	size_t n = strlen(name);
	int i;

	for (i = 1; i < argc; i++)
		if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return dflt;
}

int main(int argc, char **argv)
{
	const char *backend = arg(argc, argv, "--backend", "rcmp");
	const char *ops_path = arg(argc, argv, "--ops", NULL);
	uint64_t items = strtoull(arg(argc, argv, "--items", "0"), NULL, 10);
	int threads = atoi(arg(argc, argv, "--threads", "1"));
	uint32_t racks = (uint32_t)atoi(arg(argc, argv, "--racks", "2"));
	double hot = atof(arg(argc, argv, "--hot-threshold", "4"));
	uint64_t free_pages = strtoull(arg(argc, argv, "--rack-free-pages", "0"), NULL, 10);
	uint64_t cxl_ns = strtoull(arg(argc, argv, "--cxl-latency-ns", "140"), NULL, 10);
	struct client *cl;
	struct rcmp_stats st, st0;
	uint64_t i, t0, t1, total = 0, probes = 0, missing = 0, pages, p50_ns = 0, p99_ns = 0;
	int t;

	direct = !strcmp(arg(argc, argv, "--direct", "0"), "1");
	if (!ops_path || !items || threads < 1 || !racks ||
	    (strcmp(backend, "rcmp") && strcmp(backend, "pages"))) {
		fprintf(stderr, "usage: rcmp-kv --backend=rcmp|pages --items=N --ops=FILE "
				"[--threads=T --racks=2 --hot-threshold=4 --cxl-latency-ns=140 "
				"--direct=0|1 --rack-free-pages=0]\n");
		return 2;
	}
	slots = direct ? items : 2 * items;
	slots_per_page = (2u << 20) / SLOT;
	pages = (slots + slots_per_page - 1) / slots_per_page;
	cl = calloc((size_t)threads, sizeof(*cl));
	if (!cl || load_ops(ops_path, cl, threads))
		return 2;
	/* Load keys 0..N-1 into a staging copy, then place it. */
	{
		uint8_t *stage = calloc(pages * slots_per_page, SLOT);

		if (!stage)
			return 1;
		for (i = 0; i < items; i++) {
			uint64_t s = fnv1a64(i) % slots, k = i + 1, stored;

			for (;;) {
				memcpy(&stored, stage + s * SLOT, 8);
				if (!stored)
					break;
				s = (s + 1) % slots;
			}
			memcpy(stage + s * SLOT, &k, 8);
			memset(stage + s * SLOT + 8, 0x5a, SLOT - 8);
		}
		if (!strcmp(backend, "rcmp")) {
			struct rcmp_options o =
				rcmp_default_options(racks, ((pages + racks - 1) / racks + free_pages) *
								    (2u << 20));

			o.hot_threshold = hot;
			o.cxl_latency_ns = cxl_ns;
			o.alloc_policy = RCMP_ALLOC_INTERLEAVE;
			pool = rcmp_open(&o);
			page_addr = calloc(pages, sizeof(*page_addr));
			if (!pool || !page_addr)
				return 1;
			for (i = 0; i < pages; i++) {
				page_addr[i] = rcmp_alloc(pool, 2u << 20);
				if (page_addr[i] == RCMP_NULL)
					return 1;
			}
			/* Placed directly (not timed): the pre-load of §6.4. */
			for (i = 0; i < pages; i++)
				rcmp_write(pool, page_addr[i], 2u << 20, stage + i * (2u << 20));
		} else {
			table = mmap(NULL, pages * (2u << 20), PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (table == MAP_FAILED)
				return 1;
			memcpy(table, stage, pages * (2u << 20));
		}
		free(stage);
	}
	memset(&st0, 0, sizeof(st0));
	if (pool)
		rcmp_get_stats(pool, &st0); /* the run's counters: minus the pre-load's */
	t0 = now_ns();
	for (t = 0; t < threads; t++)
		pthread_create(&cl[t].th, NULL, run_client, &cl[t]);
	for (t = 0; t < threads; t++) {
		pthread_join(cl[t].th, NULL);
		total += cl[t].n;
		probes += cl[t].probes;
		missing += cl[t].missing;
	}
	t1 = now_ns();
	/* Percentiles of the merged histogram (bucket lower bounds, within 1.6 %). */
	{
		static struct sd_hist all;
		uint64_t want50, want99, seen = 0;
		uint32_t b;

		sd_hist_init(&all);
		for (t = 0; t < threads; t++)
			for (b = 0; b < SD_HIST_BUCKETS; b++) {
				all.counts[b] += cl[t].lat.counts[b];
				all.n += cl[t].lat.counts[b];
			}
		want50 = (all.n + 1) / 2;
		want99 = all.n - all.n / 100;
		for (b = 0; b < SD_HIST_BUCKETS; b++) {
			uint64_t before = seen;

			seen += all.counts[b];
			if (before < want50 && seen >= want50)
				p50_ns = sd_hist_lower(b);
			if (before < want99 && seen >= want99)
				p99_ns = sd_hist_lower(b);
		}
	}
	memset(&st, 0, sizeof(st));
	if (pool) {
		rcmp_get_stats(pool, &st);
		st.cxl_reads -= st0.cxl_reads;
		st.remote_reads -= st0.remote_reads;
		st.cxl_writes -= st0.cxl_writes;
		st.remote_writes -= st0.remote_writes;
		st.migrations -= st0.migrations;
		st.victims -= st0.victims;
	}
	printf("{\"backend\": \"%s\", \"direct\": %d, \"items\": %llu, \"threads\": %d, "
	       "\"accesses\": %llu, "
	       "\"seconds\": %.6f, \"accesses_per_s\": %.1f, \"mean_latency_us\": %.3f, "
	       "\"p50_latency_us\": %.3f, \"p99_latency_us\": %.3f, "
	       "\"probes\": %llu, \"missing\": %llu, \"cxl_reads\": %llu, \"remote_reads\": %llu, "
	       "\"cxl_writes\": %llu, \"remote_writes\": %llu, \"migrations\": %llu, "
	       "\"victims\": %llu}\n",
	       backend, direct, (unsigned long long)items, threads, (unsigned long long)total,
	       (t1 - t0) / 1e9, total / ((t1 - t0) / 1e9),
	       (t1 - t0) / 1e3 * threads / (double)(total ? total : 1), p50_ns / 1e3, p99_ns / 1e3,
	       (unsigned long long)probes,
	       (unsigned long long)missing, (unsigned long long)st.cxl_reads,
	       (unsigned long long)st.remote_reads, (unsigned long long)st.cxl_writes,
	       (unsigned long long)st.remote_writes, (unsigned long long)st.migrations,
	       (unsigned long long)st.victims);
	fflush(stdout);
	if (pool)
		rcmp_close(pool);
	return 0;
}
