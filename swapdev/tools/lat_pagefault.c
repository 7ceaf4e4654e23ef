/*
 * lat_pagefault: the cost of faulting in one page of a mapped file, in the manner of
 * LMBench's lat_pagefault (lmbench3, Staelin, "lmbench: an extensible micro-benchmark
 * suite", Softw. Pract. Exper. 35(11), 2005), which Ruan et al. (HPE composable memory,
 * papers/004, §4.2 and Table 2) run on a file of a local RAM disk, of the RoCE/iSER block
 * device and of an HDD to get the paging-latency multiple D of their Eq. (1).
 *
 * What lmbench3 does (src/lat_pagefault.c): open the file read-only, mmap it PROT_READ
 * MAP_SHARED, msync(MS_INVALIDATE) to drop its pages, then read one byte of every page in a
 * random permutation of the pages and report the mean time per page. On Linux
 * MS_INVALIDATE drops nothing (Hugh Dickins, linux-mm, 2008-04-30, "Page Faults slower in
 * 2.6.25-rc9": "expecting msync(,,MS_INVALIDATE) to do something it's never done on
 * Linux"), which is the cache-hit under-reporting the paper warns of (§4.2). So here the
 * pages are dropped with posix_fadvise(POSIX_FADV_DONTNEED) (the file's page cache; for a
 * block device, the device's), and MADV_RANDOM turns off the fault read-around so that one
 * fault reads one page from the device. Every fault is timed on its own with
 * CLOCK_MONOTONIC (one clock read is ~40 ns here); the major-fault count is reported so a
 * page-cache hit shows.
 *
 *   lat_pagefault FILE [--pages N] [--seed S] [--rounds R]
 *
 * FILE: a regular file or a block device (e.g. the swap backend's loop device); the first
 * N pages (default: all, at least 256 = 1 MiB as lmbench requires) are used. Each of the R
 * rounds (default 1) drops the cache and faults every page once in a fresh permutation.
 * Output: one JSON object, latencies in ns: mean_ns, p10/p50/p90/p99_ns, max_ns, pages,
 * faults (timed accesses), majflt (major faults during the timed accesses), and
 * cpu_probe_ns: the median time of PROBE_ITERS dependent 64-bit multiply-adds, run every
 * PROBE_EVERY faults outside the timed accesses: the speed of this vCPU during the run.
 * Why: on the 2-vCPU VM the fault latency of a whole run sits in a fast or a slow mode
 * (bench/RESULTS.md, "D: page-fault latency", placement subsection), with everything on
 * one CPU as well; the runs' median fault latency tracks this probe, partly
 * (2026-11-28: r = 0.98 over 9 runs, ~1.30 ns per step with ~30 us faults, ~1.42-1.46 ns
 * with ~42-46 us; R^2 = 0.75 over 15 more; some runs are slow with a fast probe), so a
 * slow probe says the host slowed that run.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "bench_util.h"

#define PAGE 4096ull
#define PROBE_EVERY 128
#define PROBE_ITERS 100000

/* ns for PROBE_ITERS steps of a dependent LCG (volatile: neither folded nor vectorized). */
static uint32_t cpu_probe(void)
{
	volatile uint64_t x = 1;
	uint64_t t = now_ns(), k;

	for (k = 0; k < PROBE_ITERS; k++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	t = now_ns() - t;
	return (uint32_t)(t > 0xffffffffu ? 0xffffffffu : t);
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	uint64_t npages = 0, seed = 1, rounds = 1, size = 0, i, r, n = 0, np = 0, sum = 0, s;
	uint64_t *order;
	uint32_t *lat, *probe;
	volatile const char *where;
	struct stat st;
	long mf0, mf = 0;
	int fd, a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--pages") && a + 1 < argc)
			npages = strtoull(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--rounds") && a + 1 < argc)
			rounds = strtoull(argv[++a], NULL, 10);
		else if (!file)
			file = argv[a];
		else
			file = NULL, a = argc;
	}
	if (!file || !rounds) {
		fprintf(stderr, "usage: lat_pagefault FILE [--pages N] [--seed S] [--rounds R]\n");
		return 2;
	}
	fd = open(file, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(file);
		return 2;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
			perror("lat_pagefault: BLKGETSIZE64");
			return 2;
		}
	} else
		size = (uint64_t)st.st_size;
	size -= size % PAGE;
	if (!npages)
		npages = size / PAGE;
	if (npages < 256 || npages * PAGE > size) {
		fprintf(stderr, "lat_pagefault: %s: %llu bytes; need 256 <= pages <= %llu\n", file,
			(unsigned long long)size, (unsigned long long)(size / PAGE));
		return 2;
	}
	where = mmap(NULL, npages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	order = malloc(npages * sizeof(*order));
	lat = malloc(npages * rounds * sizeof(*lat));
	probe = malloc((npages / PROBE_EVERY + 1) * rounds * sizeof(*probe));
	if (where == MAP_FAILED || !order || !lat || !probe) {
		perror("lat_pagefault: allocation");
		return 2;
	}
	madvise((void *)where, npages * PAGE, MADV_RANDOM);
	s = seed;
	for (r = 0; r < rounds; r++) {
		/* Drop the pages: unmap them from this process, then from the page cache. */
		madvise((void *)where, npages * PAGE, MADV_DONTNEED);
		fdatasync(fd); /* dirty pages would stay cached */
		posix_fadvise(fd, 0, (off_t)(npages * PAGE), POSIX_FADV_DONTNEED);
		shuffle_u64(order, npages, &s);
		mf0 = majflt();
		for (i = 0; i < npages; i++) {
			uint64_t t1, t2;

			if (i % PROBE_EVERY == 0)
				probe[np++] = cpu_probe();
			t1 = now_ns();
			(void)where[order[i] * PAGE];
			t2 = now_ns();
			lat[n++] = (uint32_t)(t2 - t1 > 0xffffffffu ? 0xffffffffu : t2 - t1);
		}
		mf += majflt() - mf0;
	}
	for (i = 0; i < n; i++)
		sum += lat[i];
	qsort(lat, n, sizeof(*lat), cmp_u32);
	qsort(probe, np, sizeof(*probe), cmp_u32);
	printf("{\"file\": \"%s\", \"pages\": %llu, \"rounds\": %llu, \"faults\": %llu, "
	       "\"majflt\": %ld, \"mean_ns\": %.1f, \"p10_ns\": %u, \"p50_ns\": %u, \"p90_ns\": %u, "
	       "\"p99_ns\": %u, \"max_ns\": %u, \"cpu_probe_ns\": %u}\n",
	       file, (unsigned long long)npages, (unsigned long long)rounds,
	       (unsigned long long)n, mf, (double)sum / (double)n, lat[n / 10], lat[n / 2],
	       lat[n * 9 / 10], lat[n * 99 / 100], lat[n - 1], probe[np / 2]);
	return 0;
}
