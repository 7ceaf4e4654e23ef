/*
 * memtouch: the device's test and benchmark workload. Maps MIB MiB of anonymous memory,
 * writes a known pattern over every page, then reads every page back PASSES times
 * (sequentially, or in a random order with --random), timing the first access of each page
 * with CLOCK_MONOTONIC and checking every word of it. Prints one JSON object:
 * per-access latency quantiles of the read passes (ns), the read throughput (GB/s, 1e9 B/s),
 * major faults, and bad_pages (pages whose content was wrong; 0 means intact).
 *
 * With --fork, a child forked after the write pass checks every page too (fork_bad_pages).
 *
 * With --hotcold HOT,SCAN (the eviction policy's oracle workload) each of the PASSES rounds
 * reads the hot set, pages 0..HOT-1, then the next SCAN pages of a cold stream over pages
 * HOT..end (wrapping), so the hot pages are read once per HOT + SCAN accesses. It also
 * reports hot_slow_accesses, the reads of hot pages after round 0 taking >= 1 us (faults),
 * and their median latency hot_slow_p50_ns.
 *
 *   memtouch MIB [PASSES] [--random | --hotcold HOT,SCAN] [--seed N] [--fork]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "bench_util.h"

#define PAGE 4096ul
#define WORDS (PAGE / 8)

static uint64_t pattern(uint64_t page, uint64_t word, uint64_t seed)
{
	uint64_t z = (page << 9 | word) + seed * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	return z ^ (z >> 27);
}

int main(int argc, char **argv)
{
	uint64_t mib = 0, passes = 1, seed = 1, npages, i, p, bad = 0, slow = 0, sum = 0;
	uint64_t hot = 0, scan = 0, per_pass, cold_next = 0;
	int rnd = 0, do_fork = 0, a;
	long fork_bad = -1;
	uint64_t *mem, *order;
	uint32_t *lat, *hot_lat;
	uint64_t n_hot_slow = 0;
	uint64_t t0, t_write, t_read = 0;
	long mf0;
	size_t n;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--random"))
			rnd = 1;
		else if (!strcmp(argv[a], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[a], "--hotcold") && a + 1 < argc) {
			if (sscanf(argv[++a], "%llu,%llu", (unsigned long long *)&hot,
				   (unsigned long long *)&scan) != 2 || !hot) {
				fprintf(stderr, "memtouch: --hotcold %s: expected HOT,SCAN pages\n",
					argv[a]);
				return 2;
			}
		} else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 10);
		else if (!mib)
			mib = strtoull(argv[a], NULL, 10);
		else
			passes = strtoull(argv[a], NULL, 10);
	}
	if (!mib || !passes) {
		fprintf(stderr,
			"usage: memtouch MIB [PASSES] [--random | --hotcold HOT,SCAN] [--seed N] "
			"[--fork]\n");
		return 2;
	}
	npages = mib * 256;
	if (hot && (rnd || hot >= npages)) {
		fprintf(stderr, "memtouch: --hotcold needs HOT < %llu pages and no --random\n",
			(unsigned long long)npages);
		return 2;
	}
	per_pass = hot ? hot + scan : npages;
	mem = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	order = malloc((npages > per_pass ? npages : per_pass) * sizeof(*order));
	lat = malloc(per_pass * passes * sizeof(*lat));
	hot_lat = malloc((hot ? hot * passes : 1) * sizeof(*hot_lat));
	if (mem == MAP_FAILED || !order || !lat || !hot_lat) {
		perror("memtouch: allocation");
		return 2;
	}
	madvise(mem, npages * PAGE, MADV_NOHUGEPAGE);
	if (rnd) {
		uint64_t s = seed;

		shuffle_u64(order, npages, &s);
	} else {
		for (i = 0; i < npages; i++)
			order[i] = i;
	}
	t0 = now_ns();
	for (i = 0; i < npages; i++)
		for (p = 0; p < WORDS; p++)
			mem[i * WORDS + p] = pattern(i, p, seed);
	t_write = now_ns() - t0;
	if (do_fork) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			uint64_t nbad = 0;

			for (i = 0; i < npages; i++)
				for (p = 0; p < WORDS; p++)
					if (mem[i * WORDS + p] != pattern(i, p, seed)) {
						nbad++;
						break;
					}
			_exit(nbad ? 1 : 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			perror("memtouch: fork");
			return 2;
		}
		fork_bad = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	}
	mf0 = majflt();
	n = 0;
	for (p = 0; p < passes; p++) {
		uint64_t tp = now_ns();

		if (hot) { /* this round's order: the hot set, then the cold stream's next pages */
			for (i = 0; i < hot; i++)
				order[i] = i;
			for (i = 0; i < scan; i++) {
				order[hot + i] = hot + cold_next;
				cold_next = (cold_next + 1) % (npages - hot);
			}
		}
		for (i = 0; i < per_pass; i++) {
			uint64_t pg = order[i], w, t1, t2;
			volatile uint64_t *q = &mem[pg * WORDS];

			t1 = now_ns();
			w = q[0];
			t2 = now_ns();
			lat[n++] = (uint32_t)(t2 - t1 > 0xffffffffu ? 0xffffffffu : t2 - t1);
			if (hot && p > 0 && i < hot && lat[n - 1] >= 1000)
				hot_lat[n_hot_slow++] = lat[n - 1];
			if (w != pattern(pg, 0, seed)) {
				bad++;
				continue;
			}
			for (w = 1; w < WORDS; w++)
				if (q[w] != pattern(pg, w, seed)) {
					bad++;
					break;
				}
		}
		t_read += now_ns() - tp;
	}
	for (i = 0; i < n; i++) {
		sum += lat[i];
		slow += lat[i] >= 1000;
	}
	qsort(lat, n, sizeof(*lat), cmp_u32);
	qsort(hot_lat, n_hot_slow, sizeof(*hot_lat), cmp_u32);
	printf("{\"pages\": %llu, \"passes\": %llu, \"accesses\": %zu, \"bad_pages\": %llu, "
	       "\"slow_accesses\": %llu, \"majflt\": %ld, \"write_s\": %.6f, \"read_s\": %.6f, "
	       "\"read_gbps\": %.4f, \"mean_ns\": %.1f, \"p50_ns\": %u, \"p90_ns\": %u, "
	       "\"p99_ns\": %u, \"p995_ns\": %u, \"max_ns\": %u, \"fork_status\": %ld, "
	       "\"hot_slow_accesses\": %llu, \"hot_slow_p50_ns\": %u}\n",
	       (unsigned long long)npages, (unsigned long long)passes, n, (unsigned long long)bad,
	       (unsigned long long)slow, majflt() - mf0, t_write / 1e9, t_read / 1e9,
	       (double)(per_pass * passes * PAGE) / (double)t_read, (double)sum / (double)n,
	       lat[n / 2], lat[n * 90 / 100], lat[n * 99 / 100], lat[n * 995 / 1000], lat[n - 1],
	       fork_bad, (unsigned long long)n_hot_slow, n_hot_slow ? hot_lat[n_hot_slow / 2] : 0);
	return bad || fork_bad > 0 ? 1 : 0;
}
