/*
 * librcmp, two cases.
 *
 * 1. A swap with a victim, by hand (§5.3): 2 racks of one 2 MiB page each, page 0 local
 *    (written once: hotness 1), page 1 remote.  H_p = 2: the write and the first read of
 *    page 1 have hotness 1 and ~2 (not > 2), the second read ~3 > 2: page 1 moves in, and
 *    page 0, the coldest local page (1 <= H_p, so not hot), goes out in exchange.  Both
 *    pages keep their data.
 * 2. Concurrency: 4 threads write and read back objects of 64..4000 B filling 13 pages over
 *    5 racks (interleaved, §6.3), over 4x this rack's 3-page pool (the local budget), this
 *    rack holding 2 of them (pages 4, 9) and one free page a hot page can move into.  Every
 *    Read must return what the last Write of that object stored (versioned patterns); the counters must show
 *    both tiers, a migration, buffered small writes under a WLock (§5.4), and add up to the
 *    accesses made.
 *
 * 3. The swap is off the client's path (§5.3: the daemon's swap manager does it).  2 racks
 *    of one page each, the inter-rack model `fixed` with L = 20 us and 50 Mbps, so
 *      a 64 B remote read (a pure RPC of 16 + 64 B, case 4) L + 80 * 8 / 50e6 s = 32.8 us,
 *      the swap (2 MiB in and 2 MiB out, posted together) L + 2^21 * 8 / 50e6 s = 335.56 ms.
 *    H_p = 2: the third access of page 1 finds it hot.  That access must take the remote
 *    latency, not the swap's (bound: 32.8 us + 50 ms of scheduling slack, far below
 *    335.56 ms); right after it the page is still in rack 1 and a read of it is still a
 *    remote read of the right bytes; a write to it waits for the page-table update, so it
 *    ends no earlier than 335.56 ms after the swap started, lands in rack 0 (a CXL write)
 *    and is what a later read returns; the victim (page 0) keeps its bytes.
 *
 * 4. RRPC's modes (§5.5), one thread, swapping off, `fixed` with L = 20 us and 1 Gbps
 *    (8 ns a byte), header 16 B: a remote 64 B read is a pure RPC of 16 + 64 B,
 *    L + 80 * 8 = 20.64 us; 511 B, L + 527 * 8 = 24.216 us; the first 512 B access to a
 *    page is an address-lookup RPC of 16 B (L + 128 ns) then a one-sided 512 B transfer
 *    (L + 4096 ns): 44.224 us; the second, the transfer alone: 24.096 us.  Each access
 *    takes at least its target (the busy-wait never ends early; preemption only adds),
 *    and the counters name the modes: 2 RPCs, 2 one-sided, 1 lookup.
 *
 * Cases 1 and 2 use the delay core's `fixed` model at 200 ns, so the waits are real but
 * short.
 */
#define _GNU_SOURCE
#include "rcmp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define RACKS 5
#define PAGE (2u << 20)
#define RACK_BYTES (3ull * PAGE)
#define PAGES_USED 13
#define ROUNDS 6

static struct rcmp_pool *pool;
static rcmp_gaddr *obj;
static size_t *obj_size;
static size_t nobj;
static pthread_barrier_t barrier;
static unsigned long errors;
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;

static void pattern(uint8_t *buf, size_t n, size_t id, unsigned version)
{
	uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ull + version * 0xBF58476D1CE4E5B9ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static void check(size_t id, unsigned version, uint8_t *got, uint8_t *want)
{
	pattern(want, obj_size[id], id, version);
	if (memcmp(got, want, obj_size[id])) {
		pthread_mutex_lock(&err_mu);
		if (errors++ < 5)
			fprintf(stderr, "object %zu (%zu B, version %u): read differs from write\n", id,
				obj_size[id], version);
		pthread_mutex_unlock(&err_mu);
	}
}

static void *worker(void *arg)
{
	size_t t = (size_t)arg, i;
	uint8_t *buf = malloc(PAGE), *want = malloc(PAGE);
	unsigned round;

	for (round = 1; round <= ROUNDS; round++) {
		for (i = t; i < nobj; i += THREADS) {
			pattern(buf, obj_size[i], i, round);
			if (obj_size[i] < 256 && round % 2 == 0) { /* small writes under a WLock */
				rcmp_lock(pool, obj[i], RCMP_WLOCK);
				rcmp_write(pool, obj[i], obj_size[i], buf);
				rcmp_unlock(pool, obj[i]);
			} else {
				rcmp_write(pool, obj[i], obj_size[i], buf);
			}
		}
		for (i = t; i < nobj; i += THREADS) { /* read back, several times: pages get hot */
			rcmp_read(pool, obj[i], obj_size[i], buf);
			check(i, round, buf, want);
		}
	}
	pthread_barrier_wait(&barrier);
	for (i = 0; i < nobj; i++) { /* everyone's objects, final version */
		rcmp_read(pool, obj[i], obj_size[i], buf);
		check(i, ROUNDS, buf, want);
	}
	free(buf);
	free(want);
	return NULL;
}

static int swap_case(void)
{
	struct rcmp_options o = rcmp_default_options(2, PAGE);
	struct rcmp_pool *p;
	struct rcmp_stats st;
	uint8_t *a = malloc(PAGE), *b = malloc(PAGE), *c = malloc(PAGE);
	rcmp_gaddr g0, g1;
	int i, rc = 0;

	o.page_bytes = PAGE;
	o.hot_threshold = 2.0;
	o.alloc_policy = RCMP_ALLOC_INTERLEAVE;
	p = rcmp_open(&o);
	if (!p || !a || !b || !c)
		return 1;
	g0 = rcmp_alloc(p, PAGE);
	g1 = rcmp_alloc(p, PAGE);
	pattern(a, PAGE, 0, 1);
	pattern(b, PAGE, 1, 1);
	rcmp_write(p, g1, PAGE, b); /* remote write: hotness 1 */
	rcmp_write(p, g0, PAGE, a); /* local: hotness 1 */
	if (rcmp_rack_of(p, g0) != 0 || rcmp_rack_of(p, g1) != 1)
		rc = 1;
	rcmp_read(p, g1, 64, c); /* hotness ~2: not hot */
	rcmp_get_stats(p, &st);
	if (st.migrations)
		rc = 1;
	rcmp_read(p, g1, 64, c); /* ~3 > 2: a swap request; the daemon moves page 1 in, 0 out */
	rcmp_wait_migrations(p);
	rcmp_get_stats(p, &st);
	if (st.migrations != 1 || st.victims != 1 || rcmp_rack_of(p, g1) != 0 ||
	    rcmp_rack_of(p, g0) != 1)
		rc = 1;
	for (i = 0; i < 2; i++) {
		rcmp_read(p, i ? g1 : g0, PAGE, c);
		if (memcmp(c, i ? b : a, PAGE))
			rc = 1;
	}
	rcmp_close(p);
	free(a);
	free(b);
	free(c);
	if (rc)
		fprintf(stderr, "FAIL: swap case: migrations %llu victims %llu\n",
			(unsigned long long)st.migrations, (unsigned long long)st.victims);
	return rc;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Cases 3 and 4: 2 racks of one page each, pages interleaved, H_p hot_threshold, and
 * `fixed` across racks at 20 us and bandwidth_bps (the other cases' 200 ns restored). */
static struct rcmp_pool *open_two_racks(double hot_threshold, const char *bandwidth_bps)
{
	struct rcmp_options o = rcmp_default_options(2, PAGE);
	struct rcmp_pool *p;

	setenv("SWAPDEV_LATENCY_NS", "20000", 1);
	setenv("SWAPDEV_BANDWIDTH_BPS", bandwidth_bps, 1);
	o.page_bytes = PAGE;
	o.hot_threshold = hot_threshold;
	o.alloc_policy = RCMP_ALLOC_INTERLEAVE;
	p = rcmp_open(&o);
	unsetenv("SWAPDEV_BANDWIDTH_BPS");
	setenv("SWAPDEV_LATENCY_NS", "200", 1);
	return p;
}

static int async_case(void)
{
	const uint64_t latency_ns = 20000, bps = 50000000;
	/* a pure RPC (case 4): header + 64 B */
	const uint64_t remote_ns = latency_ns + (16 + 64) * 8 * 1000000000ull / bps; /* 32.8 us */
	const uint64_t swap_ns = latency_ns + (uint64_t)PAGE * 8 * 1000000000ull / bps; /* 335.56 ms */
	const uint64_t slack_ns = 50000000;
	struct rcmp_stats st0, st1, st2;
	uint8_t a[64], b[64], c[64], w[64];
	uint64_t t_trigger, took_trigger, t, took_read, write_end;
	rcmp_gaddr g0, g1;
	struct rcmp_pool *p;
	int rc = 0, rack_during;

	p = open_two_racks(2.0, "50000000");
	if (!p)
		return 1;
	g0 = rcmp_alloc(p, PAGE);
	g1 = rcmp_alloc(p, PAGE);
	pattern(a, 64, 0, 1);
	pattern(b, 64, 1, 1);
	pattern(w, 64, 1, 2);
	rcmp_write(p, g0, 64, a); /* local */
	rcmp_write(p, g1, 64, b); /* remote: hotness 1 */
	rcmp_read(p, g1, 64, c);  /* ~2 */
	rcmp_get_stats(p, &st0);
	t_trigger = mono_ns();
	rcmp_read(p, g1, 64, c); /* ~3 > 2: the swap request */
	took_trigger = mono_ns() - t_trigger;
	rack_during = rcmp_rack_of(p, g1);
	t = mono_ns();
	rcmp_read(p, g1, 64, c); /* during the swap: the remote path, the old bytes */
	took_read = mono_ns() - t;
	rcmp_get_stats(p, &st1);
	if (memcmp(c, b, 64))
		rc = 1;
	rcmp_write(p, g1, 64, w); /* waits for the page-table update, then a CXL write */
	write_end = mono_ns();
	rcmp_get_stats(p, &st2);
	rcmp_read(p, g1, 64, c);
	if (memcmp(c, w, 64) || rcmp_rack_of(p, g1) != 0)
		rc = 1;
	rcmp_read(p, g0, 64, c);
	if (memcmp(c, a, 64) || rcmp_rack_of(p, g0) != 1)
		rc = 1;
	fprintf(stderr,
		"async swap: trigger %.2f us (remote %.2f us), read during %.2f us, write ended "
		"%.2f ms after the trigger (swap %.2f ms), rack during %d\n",
		took_trigger / 1e3, remote_ns / 1e3, took_read / 1e3,
		(write_end - t_trigger) / 1e6, swap_ns / 1e6, rack_during);
	if (took_trigger < remote_ns || took_trigger > remote_ns + slack_ns || rack_during != 1 ||
	    took_read < remote_ns || took_read > remote_ns + slack_ns ||
	    st1.remote_reads != st0.remote_reads + 2 || st1.migrations != 0 ||
	    st1.swap_requests != 1 ||
	    write_end - t_trigger < swap_ns || st2.migrations != 1 || st2.victims != 1 ||
	    st2.cxl_writes != st1.cxl_writes + 1 || st2.remote_writes != st1.remote_writes)
		rc = 1;
	rcmp_close(p);
	if (rc)
		fprintf(stderr, "FAIL: async swap case\n");
	return rc;
}

static int rrpc_case(void)
{
	static const struct {
		size_t n;
		uint64_t target_ns;
	} acc[] = {{64, 20640}, {511, 24216}, {512, 44224}, {512, 24096}};
	const uint64_t slack_ns = 50000000;
	struct rcmp_options o = rcmp_default_options(2, PAGE);
	struct rcmp_stats st;
	uint8_t buf[512];
	struct rcmp_pool *p;
	rcmp_gaddr g;
	uint64_t t, took;
	size_t i;
	int rc = 0;

	p = open_two_racks(-1, "1000000000");
	if (!p)
		return 1;
	rcmp_alloc(p, PAGE);     /* page 0: rack 0, local */
	g = rcmp_alloc(p, 1024); /* page 1: rack 1 */
	if (rcmp_rack_of(p, g) != 1 || o.rpc_threshold_bytes != 512 || o.rpc_header_bytes != 16)
		rc = 1;
	for (i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
		t = mono_ns();
		rcmp_read(p, g, acc[i].n, buf);
		took = mono_ns() - t;
		fprintf(stderr, "rrpc: %zu B read took %.3f us (target %.3f us)\n", acc[i].n,
			took / 1e3, acc[i].target_ns / 1e3);
		if (took < acc[i].target_ns || took > acc[i].target_ns + slack_ns)
			rc = 1;
	}
	rcmp_get_stats(p, &st);
	if (st.rpc_accesses != 2 || st.onesided_accesses != 2 || st.addr_lookups != 1 ||
	    st.remote_reads != 4)
		rc = 1;
	rcmp_close(p);
	if (rc)
		fprintf(stderr, "FAIL: rrpc case: rpc %llu one-sided %llu lookups %llu\n",
			(unsigned long long)st.rpc_accesses,
			(unsigned long long)st.onesided_accesses,
			(unsigned long long)st.addr_lookups);
	return rc;
}

int main(void)
{
	static const size_t sizes[] = {64, 200, 1000, 4000, 100};
	struct rcmp_options o = rcmp_default_options(RACKS, RACK_BYTES);
	const size_t budget = (size_t)PAGES_USED * PAGE;
	pthread_t th[THREADS];
	struct rcmp_stats st;
	size_t cap = 0, i, total = 0;
	rcmp_gaddr g;

	setenv("SWAPDEV_MODEL", "fixed", 1);
	setenv("SWAPDEV_LATENCY_NS", "200", 1);
	unsetenv("SWAPDEV_BANDWIDTH_BPS");
	unsetenv("SWAPDEV_TRACE");
	unsetenv("SWAPDEV_HIST");
	if (swap_case() || async_case() || rrpc_case())
		return 1;
	o.page_bytes = PAGE;
	o.hot_threshold = 2.0;
	o.local_rack = 4; /* holds pages 4 and 9 of 12: one of its 3 slots stays free */
	o.alloc_policy = RCMP_ALLOC_INTERLEAVE;
	pool = rcmp_open(&o);
	if (!pool)
		return 1;
	/* 13 pages, more than 4x the local rack's pool of 3. */
	for (;;) {
		size_t s = sizes[nobj % 5];

		if (total + s > budget - PAGE / 2) /* 12.5 pages of data: 13 pages */
			break;
		g = rcmp_alloc(pool, s);
		if (g == RCMP_NULL)
			break;
		if (nobj == cap) {
			cap = cap ? 2 * cap : 1024;
			obj = realloc(obj, cap * sizeof(*obj));
			obj_size = realloc(obj_size, cap * sizeof(*obj_size));
		}
		obj[nobj] = g;
		obj_size[nobj++] = s;
		total += s;
	}
	if (total < 4 * RACK_BYTES || rcmp_rack_of(pool, obj[nobj - 1]) < 0) {
		fprintf(stderr, "allocated %zu bytes, expected about 4x %llu\n", total,
			(unsigned long long)RACK_BYTES);
		return 1;
	}
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	rcmp_wait_migrations(pool);
	rcmp_get_stats(pool, &st);
	fprintf(stderr,
		"objects %zu (%zu B); cxl r/w %llu/%llu remote r/w %llu/%llu buffered %llu "
		"migrations %llu victims %llu stopped %llu\n",
		nobj, total, (unsigned long long)st.cxl_reads, (unsigned long long)st.cxl_writes,
		(unsigned long long)st.remote_reads, (unsigned long long)st.remote_writes,
		(unsigned long long)st.buffered_writes, (unsigned long long)st.migrations,
		(unsigned long long)st.victims, (unsigned long long)st.swaps_stopped);
	rcmp_close(pool);
	if (errors) {
		fprintf(stderr, "FAIL: %lu reads differ\n", errors);
		return 1;
	}
	/* Every path taken: both tiers, a hot page moved into the free local page, buffered
	 * writes. */
	if (!st.cxl_reads || !st.remote_reads || !st.migrations || !st.buffered_writes) {
		fprintf(stderr, "FAIL: a path was not exercised\n");
		return 1;
	}
	/* Accesses add up: (ROUNDS writes + ROUNDS reads) per object + THREADS final reads. */
	if (st.cxl_reads + st.remote_reads != nobj * (ROUNDS + THREADS) ||
	    st.cxl_writes + st.remote_writes + st.buffered_writes != nobj * ROUNDS) {
		fprintf(stderr, "FAIL: access counts do not add up\n");
		return 1;
	}
	fprintf(stderr, "ok\n");
	return 0;
}
