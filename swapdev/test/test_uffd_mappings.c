/*
 * The uffd device (libswapdev_uffd.so, src/uffd_preload.c) under the mapping calls real
 * allocators and runtimes make on ranges it has registered, with a 256 KiB budget so that
 * most pages of each 2 MiB region are remote. Every page holds a pattern of its own
 * address; the oracle is what Linux gives without the device:
 *   - madvise(MADV_DONTNEED) of a whole region, then reading it: zeros, and the region
 *     works as before (jemalloc purges whole extents this way; the device dropped the
 *     region but left it registered, and the thread's first fault there repeated forever:
 *     the Timely PageRank froze);
 *   - MADV_DONTNEED of part of a region: zeros there, the pattern elsewhere;
 *   - mmap(MAP_FIXED, PROT_NONE) over resident pages (HotSpot uncommits its heap so), then
 *     enough faults elsewhere to evict: the device must not copy from the PROT_NONE pages
 *     (the eviction's memcpy faulted in the handler thread: a HotSpot crash report in
 *     hadoop-terasort at 25 %); reading there raises SIGSEGV; mapping it anew gives zeros;
 *   - mprotect(PROT_NONE) of resident and remote pages, evictions elsewhere: SIGSEGV on
 *     access, and the pattern again after mprotect(PROT_READ | PROT_WRITE);
 *   - mremap() moving the upper half of a region: the lower half's remote pages keep their
 *     data (the device unregistered the whole region but brought home only the moved part).
 * Run without LD_PRELOAD it re-executes itself with the device preloaded (argv[1], the
 * library; argv[2], optional, names one case), or exits 77 (skipped) where userfaultfd is
 * not permitted.
 * Every check runs under alarm(): a livelocked fault fails the test instead of hanging it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

#define PG 4096ul
#define REGION (2ul << 20)
#define BUDGET (256ul << 10)

static pid_t main_tid;
static sigjmp_buf segv_jump;
static volatile sig_atomic_t expect_segv;

static void on_segv(int sig)
{
	(void)sig;
	if ((pid_t)syscall(SYS_gettid) != main_tid || !expect_segv) {
		static const char msg[] = "test_uffd_mappings: SIGSEGV outside the expected access "
					  "(the device's handler thread?)\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(1);
		_exit(1);
	}
	siglongjmp(segv_jump, 1);
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_uffd_mappings: timed out (a fault never resolved)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* 1 if reading the byte at p raises SIGSEGV. */
static int read_faults(volatile const char *p)
{
	int faulted = 0;

	expect_segv = 1;
	if (sigsetjmp(segv_jump, 1) == 0)
		(void)*p;
	else
		faulted = 1;
	expect_segv = 0;
	return faulted;
}

static char *map_region(void)
{
	char *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static uint64_t pattern(const char *page)
{
	return (uint64_t)(uintptr_t)page * 2654435761u + 1;
}

static void fill(char *p, size_t len)
{
	for (size_t off = 0; off < len; off += PG)
		for (size_t w = 0; w < PG / 8; w += 61)
			((uint64_t *)(p + off))[w] = pattern(p + off) + w;
}

/* Pages of [p, p+len) that do not hold their pattern (zero: expect zeros instead). */
static unsigned long bad_pages(const char *p, size_t len, int zero)
{
	unsigned long bad = 0;

	for (size_t off = 0; off < len; off += PG) {
		for (size_t w = 0; w < PG / 8; w += 61) {
			uint64_t want = zero ? 0 : pattern(p + off) + w;

			if (((const uint64_t *)(p + off))[w] != want) {
				bad++;
				break;
			}
		}
	}
	return bad;
}

/* Fault a whole other region in: the budget forces evictions of everything else. */
static void churn(void)
{
	char *q = map_region();

	fill(q, REGION);
	munmap(q, REGION);
}

static void dontneed_whole_region(void)
{
	char *p = map_region();

	fill(p, REGION);
	CHECK_EQ(madvise(p, REGION, MADV_DONTNEED), 0);
	CHECK_EQ(bad_pages(p, REGION, 1), 0);
	fill(p, REGION);
	churn();
	CHECK_EQ(bad_pages(p, REGION, 0), 0);
	munmap(p, REGION);
}

static void dontneed_part(void)
{
	char *p = map_region();
	size_t lo = REGION / 4, len = REGION / 8;

	fill(p, REGION);
	CHECK_EQ(madvise(p + lo, len, MADV_DONTNEED), 0);
	CHECK_EQ(bad_pages(p + lo, len, 1), 0);
	CHECK_EQ(bad_pages(p, lo, 0), 0);
	CHECK_EQ(bad_pages(p + lo + len, REGION - lo - len, 0), 0);
	munmap(p, REGION);
}

static void map_fixed_prot_none(void)
{
	char *p = map_region(), *hi = p + REGION / 2;

	fill(p, REGION); /* the upper half's last pages are resident */
	CHECK_EQ(mmap(hi, REGION / 2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		      MAP_NORESERVE, -1, 0) == hi, 1);
	churn();
	CHECK_EQ(read_faults(hi), 1);
	CHECK_EQ(read_faults(p + REGION - PG), 1);
	CHECK_EQ(bad_pages(p, REGION / 2, 0), 0);
	CHECK_EQ(mmap(hi, REGION / 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		      MAP_FIXED, -1, 0) == hi, 1);
	CHECK_EQ(bad_pages(hi, REGION / 2, 1), 0);
	fill(hi, REGION / 2);
	churn();
	CHECK_EQ(bad_pages(p, REGION, 0), 0);
	munmap(p, REGION);
}

static void mprotect_none(void)
{
	char *p = map_region(), *hi = p + REGION / 2;

	fill(p, REGION); /* the upper half: remote pages, then resident ones */
	CHECK_EQ(mprotect(hi, REGION / 2, PROT_NONE), 0);
	churn();
	CHECK_EQ(read_faults(hi), 1);
	CHECK_EQ(read_faults(p + REGION - PG), 1);
	CHECK_EQ(mprotect(hi, REGION / 2, PROT_READ | PROT_WRITE), 0);
	CHECK_EQ(bad_pages(p, REGION, 0), 0);
	munmap(p, REGION);
}

static void mremap_upper_half(void)
{
	char *p = map_region(), *moved;

	fill(p, REGION); /* the lower half is remote by now */
	moved = mremap(p + REGION / 2, REGION / 2, REGION, MREMAP_MAYMOVE);
	CHECK_EQ(moved == MAP_FAILED, 0);
	if (moved == MAP_FAILED)
		return;
	CHECK_EQ(bad_pages(p, REGION / 2, 0), 0);
	/* The moved pages keep their data; their pattern is of their old addresses. */
	for (size_t off = 0; off < REGION / 2; off += PG)
		if (((uint64_t *)(moved + off))[0] != pattern(p + REGION / 2 + off)) {
			CHECK_EQ(off, REGION); /* report the first bad page */
			break;
		}
	munmap(p, REGION / 2);
	munmap(moved, REGION);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{"dontneed_whole_region", dontneed_whole_region},
	{"dontneed_part", dontneed_part},
	{"map_fixed_prot_none", map_fixed_prot_none},
	{"mprotect_none", mprotect_none},
	{"mremap_upper_half", mremap_upper_half},
};

/* argv[1]: the library; argv[2] (optional): run only the case of that name. */
int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_segv, .sa_flags = SA_NODEFER};
	const char *preload = getenv("LD_PRELOAD");

	if (!preload || !strstr(preload, "swapdev_uffd")) {
		char budget[32];
		long fd;

		if (argc < 2) {
			fprintf(stderr, "usage: %s LIBSWAPDEV_UFFD.so\n", argv[0]);
			return 2;
		}
		fd = syscall(SYS_userfaultfd, 0);
		if (fd < 0) {
			fprintf(stderr, "userfaultfd: %s: skipped\n", strerror(errno));
			return 77;
		}
		close((int)fd);
		snprintf(budget, sizeof(budget), "%lu", BUDGET);
		setenv("LD_PRELOAD", argv[1], 1);
		setenv("SWAPDEV_LOCAL_BYTES", budget, 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 2;
	}
	main_tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	signal(SIGALRM, on_alarm);
	alarm(60);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 3 || !strcmp(argv[2], cases[i].name))
			cases[i].run();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
