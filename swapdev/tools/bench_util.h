/*
 * bench_util.h: the helpers the device's benchmark tools share (memtouch, lat_pagefault,
 * paging_w): a monotonic clock in ns, the process's major faults, a u32 comparator for
 * quantiles, and a seeded Fisher-Yates permutation of 0..n-1 (64-bit LCG, Knuth's MMIX
 * constants), so the same seed gives the same access order in every tool.
 */
#ifndef SWAPDEV_BENCH_UTIL_H
#define SWAPDEV_BENCH_UTIL_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline long majflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* order[i] = a permutation of 0..n-1; *state is the LCG state (advanced). */
static inline void shuffle_u64(uint64_t *order, uint64_t n, uint64_t *state)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n ? n - 1 : 0; i > 0; i--) {
		uint64_t j, tmp;

		*state = *state * 6364136223846793005ull + 1442695040888963407ull;
		j = (*state >> 33) % (i + 1);
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
}

#endif
