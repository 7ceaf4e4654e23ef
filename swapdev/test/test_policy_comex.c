/*
 * The comex paging policy (src/policy_comex.c) on hand-made access patterns, with a
 * recording remote memory: every request's operation, page range and whether the fault
 * waited for it, and the delay it was given (T_S plus the fixed model's). Expected values
 * are counted by hand from the rules of COMEX (TPDS 2020) §3.3.5 and §4.3 as the policy's
 * header states them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/policy.h"

#include "check.h"

#define MAX_REQ 4096
struct rec {
	struct sd_req req;
	int wait;
	uint64_t delay_ns;
};
static struct rec reqs[MAX_REQ];
static unsigned nreq, nbatches, nwaits;
static uint64_t waited_until;
static struct sd_model model;
static struct sd_delay_model delay;

static uint64_t rec_request(void *ctx, const struct sd_req *req, int wait)
{
	(void)ctx;
	if (nreq < MAX_REQ) {
		reqs[nreq].req = *req;
		reqs[nreq].wait = wait;
		reqs[nreq].delay_ns = sd_delay(&delay, req);
		return reqs[nreq++].delay_ns;
	}
	return 0;
}

static void rec_end_batch(void *ctx)
{
	(void)ctx;
	nbatches++;
}

static void rec_wait_until(void *ctx, uint64_t t_ns)
{
	(void)ctx;
	nwaits++;
	waited_until = t_ns;
}

/* A fresh comex policy with the given extra parameters ("NAME=value" pairs, NULL-ended)
 * over a fixed model of latency_ns (no bandwidth term). */
static void *fresh(uint64_t latency_ns, const char *const *params)
{
	static const char *const names[] = {
		"SWAPDEV_COMEX_PREFETCH_PAGES", "SWAPDEV_COMEX_READ_BUFFER_PAGES",
		"SWAPDEV_COMEX_WRITE_BATCH_PAGES", "SWAPDEV_COMEX_WRITE_BUFFER_PAGES",
		"SWAPDEV_COMEX_SERVICE_NS", "SWAPDEV_COMEX_MEMORY_NODES",
		"SWAPDEV_COMEX_NODE_PAGES", "SWAPDEV_COMEX_NODE_ID", NULL};
	struct sd_io io = {rec_request, rec_end_batch, rec_wait_until, &delay, NULL};
	unsigned i;
	void *st;

	for (i = 0; names[i]; i++)
		unsetenv(names[i]);
	for (i = 0; params && params[i]; i++)
		putenv((char *)params[i]);
	sd_model_init(&model, SD_MODEL_FIXED);
	sd_model_set_fixed(&model, latency_ns, 0);
	delay = sd_model_interface(&model);
	nreq = nbatches = nwaits = 0;
	st = sd_paging_COMEX.create(&io, 0);
	if (!st) {
		fprintf(stderr, "comex create failed\n");
		exit(1);
	}
	return st;
}

static unsigned count(int op)
{
	unsigned i, n = 0;

	for (i = 0; i < nreq; i++)
		n += reqs[i].req.op == op;
	return n;
}

/* Evict pages first..first+n-1 (stride apart) in eviction batches of 32, at time t. */
static void evict(void *st, uint64_t first, uint64_t n, uint64_t stride, uint64_t t)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		sd_paging_COMEX.write(st, first + i * stride, 1, t);
		if (i % 32 == 31)
			sd_paging_COMEX.end_evict(st, t);
	}
	sd_paging_COMEX.end_evict(st, t);
}

#define LATER 1000000000ull /* after every write has completed */

/* Defaults: T_S = 6000 ns on every request, P = 16, 64-page write batches. */
static void test_defaults_and_costs(void)
{
	void *st = fresh(1000, NULL);

	evict(st, 0, 64, 1, 0);
	CHECK_EQ(nreq, 1); /* 64 contiguous pages: one RDMA WRITE */
	CHECK_EQ(reqs[0].req.op, SD_OP_WRITE);
	CHECK_EQ(reqs[0].req.first_page, 0);
	CHECK_EQ(reqs[0].req.npages, 64);
	CHECK_EQ(reqs[0].wait, 0);          /* asynchronous */
	CHECK_EQ(reqs[0].delay_ns, 7000);   /* T_S 6000 + the fixed model's 1000 */
	CHECK_EQ(sd_paging_COMEX.fetch(st, 5, LATER), 1);
	CHECK_EQ(reqs[1].req.op, SD_OP_READ);
	CHECK_EQ(reqs[1].req.first_page, 5);
	CHECK_EQ(reqs[1].req.npages, 16);   /* 64 KiB */
	CHECK_EQ(reqs[1].req.size_bytes, 65536);
	CHECK_EQ(reqs[1].wait, 1);
	CHECK_EQ(reqs[1].delay_ns, 7000);
	sd_paging_COMEX.finish(st, LATER, stderr);
}

/* A sequential scan of K remote pages: ceil(K/16) reads, K - ceil(K/16) read-buffer hits. */
static void test_sequential_scan(void)
{
	const uint64_t k = 1000;
	void *st = fresh(1000, NULL);
	uint64_t g, waited = 0;
	unsigned writes;

	evict(st, 0, k, 1, 0);
	sd_paging_COMEX.write(st, 5000, 1, 0); /* not contiguous: the 40-page tail is written */
	writes = nreq;
	CHECK_EQ(writes, 16); /* 15 x 64 pages + 40 */
	CHECK_EQ(reqs[15].req.npages, 40);
	for (g = 0; g < k; g++)
		waited += sd_paging_COMEX.fetch(st, g, LATER + g);
	CHECK_EQ(waited, 63);             /* ceil(1000 / 16) */
	CHECK_EQ(count(SD_OP_READ), 63);
	CHECK_EQ(reqs[writes].req.first_page, 0);
	CHECK_EQ(reqs[writes + 1].req.first_page, 16);
	CHECK_EQ(reqs[nreq - 1].req.first_page, 992);
	sd_paging_COMEX.finish(st, LATER * 2, stderr); /* writes page 5000's run */
	CHECK_EQ(count(SD_OP_WRITE), 17);
}

/* A stride of 17 pages: every access is one read (its 15 prefetched pages go unused). */
static void test_stride_17(void)
{
	void *st = fresh(0, NULL);
	uint64_t i, waited = 0;

	evict(st, 0, 17 * 64, 1, 0);
	for (i = 0; i < 64; i++)
		waited += sd_paging_COMEX.fetch(st, 17 * i, LATER);
	CHECK_EQ(waited, 64);
	CHECK_EQ(count(SD_OP_READ), 64);
	CHECK_EQ(count(SD_OP_WRITE), 17);
}

/* 64 scattered evictions: 64 writes of one page (the last when the policy finishes). */
static void test_scattered_writes(void)
{
	void *st = fresh(0, NULL);
	unsigned i;

	evict(st, 0, 64, 2, 0);
	CHECK_EQ(count(SD_OP_WRITE), 63);
	sd_paging_COMEX.finish(st, LATER, stderr);
	CHECK_EQ(count(SD_OP_WRITE), 64);
	for (i = 0; i < nreq; i++)
		CHECK_EQ(reqs[i].req.npages, 1);
	CHECK_EQ(nbatches, 64); /* each write a batch of the rmem trace */
}

/* A page still in a write buffer is served from it: no network request. */
static void test_reread_from_write_buffer(void)
{
	void *st = fresh(0, NULL);

	evict(st, 100, 10, 1, 0); /* gathering, not written yet */
	CHECK_EQ(nreq, 0);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 103, 10), 0);
	CHECK_EQ(nreq, 0);
	/* In flight (written at 0, T_S 6000 ns): still in the buffer until it completes. */
	evict(st, 110, 54, 1, 0);
	CHECK_EQ(nreq, 1);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 150, 5999), 0);
	CHECK_EQ(nreq, 1);
	/* Completed at 6000: a fault reads from the memory node. */
	CHECK_EQ(sd_paging_COMEX.fetch(st, 151, 6000), 1);
	CHECK_EQ(nreq, 2);
	CHECK_EQ(reqs[1].req.op, SD_OP_READ);
}

/*
 * LRU by entry, B = 32 pages (two entries of P = 16): read A (0..15), read B (16..31), hit
 * in A (A most recent), read C (32..47) replaces B (its 15 unused pages), hit in A again,
 * and 17 (in B, gone) is a read again.
 */
static void test_lru_by_entry(void)
{
	static const char *const p[] = {"SWAPDEV_COMEX_READ_BUFFER_PAGES=32", NULL};
	void *st = fresh(0, p);
	unsigned w;

	evict(st, 0, 64, 1, 0);
	w = nreq;
	CHECK_EQ(sd_paging_COMEX.fetch(st, 0, LATER), 1);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 16, LATER), 1);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 1, LATER), 0);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 32, LATER), 1);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 2, LATER), 0);
	CHECK_EQ(sd_paging_COMEX.fetch(st, 17, LATER), 1);
	CHECK_EQ(nreq - w, 4);
	CHECK_EQ(reqs[nreq - 1].req.first_page, 17);
}

/* A full write buffer (128 frames, 64-page batches) makes the evicting fault wait for the
 * oldest write: at 0, writes of pages 0..63 and 64..127 fill it (done at 6000 + 1000 =
 * 7000); page 128 waits until 7000. */
static void test_full_write_buffer_waits(void)
{
	static const char *const p[] = {"SWAPDEV_COMEX_WRITE_BUFFER_PAGES=128", NULL};
	void *st = fresh(1000, p);

	evict(st, 0, 200, 1, 0);
	CHECK_EQ(nwaits, 1);
	CHECK_EQ(waited_until, 7000);
	CHECK_EQ(count(SD_OP_WRITE), 3); /* 0..63, 64..127, 128..191; 192..199 gathering */
}

/* Placement: nodes of 10 pages; 30 contiguous pages fill three distinct nodes, each
 * node's buffer gathering its run of 10 (none is full, none sees a non-contiguous page:
 * written when the policy finishes), and a read prefetches only its own node's frames. */
static void test_placement_and_rehash(void)
{
	static const char *const p[] = {"SWAPDEV_COMEX_NODE_PAGES=10", NULL};
	void *st = fresh(0, p);
	uint64_t g, waited = 0;

	evict(st, 0, 30, 1, 0);
	CHECK_EQ(count(SD_OP_WRITE), 0);
	sd_paging_COMEX.finish(st, 0, stderr);
	CHECK_EQ(count(SD_OP_WRITE), 3);
	for (g = 0; g < 30; g++)
		waited += sd_paging_COMEX.fetch(st, g, LATER);
	CHECK_EQ(waited, 3); /* one read per node, at pages 0, 10 and 20 */
	CHECK_EQ(reqs[nreq - 1].req.first_page, 20);
	CHECK_EQ(reqs[nreq - 2].req.first_page, 10);
}

int main(void)
{
	test_defaults_and_costs();
	test_sequential_scan();
	test_stride_17();
	test_scattered_writes();
	test_reread_from_write_buffer();
	test_lru_by_entry();
	test_full_write_buffer_waits();
	test_placement_and_rehash();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("all comex policy checks passed\n");
	return 0;
}
