/*
 * paging_w: the write-intensive micro-benchmark of Ruan et al. (HPE composable memory,
 * papers/004, §4.3 "Micro-benchmark: Intensive-write"): "allocate memory and then do a
 * continual WRITE (8 bytes) till total allocated memory is touched". Its duration, full
 * memory over a swap device, is the performance ratio of their Fig. 4, Fig. 5 and Table 3.
 *
 *   paging_w BYTES [--seed S] [--verify]
 *
 * Maps BYTES (rounded down to whole 4 KiB pages) of private anonymous memory (no huge
 * pages, so swap moves 4 KiB pages), then writes one 8-byte word after another, in address
 * order, a known pattern value per word (a function of the word's index and S), until every
 * word is written: the timed part (write_s). With --verify it then reads every word back
 * and counts the words that differ (bad_words; 0: intact); the read-back is not timed into
 * write_s. Output: one JSON object (bytes, words, write_s, verify_s, bad_words, majflt,
 * minflt: faults of the write phase). Exit 1 if a word was wrong, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "bench_util.h"

#define PAGE 4096ull

/* The value of word i: an odd multiplier makes it a bijection of i, the seed shifts it. */
static inline uint64_t pattern(uint64_t i, uint64_t seed)
{
	return (i + seed) * 0x9e3779b97f4a7c15ull;
}

int main(int argc, char **argv)
{
	uint64_t bytes = 0, seed = 1, words, i, t0, t_write, t_verify = 0, bad = 0;
	int verify = 0, a;
	struct rusage r0, r1;
	volatile uint64_t *mem;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--verify"))
			verify = 1;
		else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 10);
		else if (!bytes)
			bytes = strtoull(argv[a], NULL, 10);
		else
			bytes = 0, a = argc;
	}
	bytes -= bytes % PAGE;
	if (!bytes) {
		fprintf(stderr, "usage: paging_w BYTES [--seed S] [--verify] (BYTES >= 4096)\n");
		return 2;
	}
	words = bytes / 8;
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("paging_w: mmap");
		return 2;
	}
	madvise((void *)mem, bytes, MADV_NOHUGEPAGE);
	getrusage(RUSAGE_SELF, &r0);
	t0 = now_ns();
	for (i = 0; i < words; i++)
		mem[i] = pattern(i, seed);
	t_write = now_ns() - t0;
	getrusage(RUSAGE_SELF, &r1);
	if (verify) {
		t0 = now_ns();
		for (i = 0; i < words; i++)
			bad += mem[i] != pattern(i, seed);
		t_verify = now_ns() - t0;
	}
	printf("{\"bytes\": %llu, \"words\": %llu, \"write_s\": %.6f, \"verify_s\": %.6f, "
	       "\"bad_words\": %lld, \"majflt\": %ld, \"minflt\": %ld}\n",
	       (unsigned long long)bytes, (unsigned long long)words, t_write / 1e9,
	       t_verify / 1e9, verify ? (long long)bad : -1LL, r1.ru_majflt - r0.ru_majflt,
	       r1.ru_minflt - r0.ru_minflt);
	return bad ? 1 : 0;
}
