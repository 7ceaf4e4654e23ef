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
 * And the device across fork() and exec (its children, each checked against the pattern
 * written and against counts that follow from the 64-page budget):
 *   - fork after the parent sent pages remote: the child reads every word of every page
 *     as written (a child without the device would read zeros where pages were remote),
 *     its own faults are served by its own device (its exit summary: at least the 960
 *     pages remote at the fork swapped in, at least 896 swapped out), its writes do not
 *     reach the parent's pages;
 *   - fork from a parent whose two threads keep faulting and evicting (rewriting the same
 *     pattern): 16 children each read both regions exactly, none hangs, and each ends with
 *     _exit (as a Python worker does) and still reports its paging (960 pages in at least);
 *   - a forked child that closes every descriptor (close_range, as CPython's subprocess
 *     before its exec, or a daemon): it reads the parent's remote pages exactly (the device
 *     brings them home before its descriptor goes) and runs on without the device;
 *   - a file mapped with MAP_FIXED over part of a region before the fork: the child
 *     registers the rest and reads it exactly;
 *   - fork then exec, and posix_spawn (vfork: no device work in the child before its
 *     exec): the new image runs on a device of its own (its summary shows paging), the
 *     parent's remote pages keep their data.
 * Run without LD_PRELOAD it re-executes itself with the device preloaded (argv[1], the
 * library; argv[2], optional, names one case), or exits 77 (skipped) where userfaultfd is
 * not permitted.
 * Every check runs under alarm(): a livelocked fault fails the test instead of hanging it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PG 4096ul
#define REGION (2ul << 20)
#define BUDGET (256ul << 10)

static pid_t main_tid;
static char *self_lib; /* argv[1]: the device library */
extern char **environ;
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

/* Every word of every page: its page's pattern + the word's index + seed. */
static void fill_all(char *p, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += PG)
		for (size_t w = 0; w < PG / 8; w++)
			((uint64_t *)(p + off))[w] = pattern(p + off) + w + seed;
}

/* Pages of [p, p+len) with a word that is not what fill_all(p, len, seed) wrote. */
static unsigned long bad_pages_all(const char *p, size_t len, uint64_t seed)
{
	unsigned long bad = 0;

	for (size_t off = 0; off < len; off += PG)
		for (size_t w = 0; w < PG / 8; w++)
			if (((const uint64_t *)(p + off))[w] != pattern(p + off) + w + seed) {
				bad++;
				break;
			}
	return bad;
}

/* A child's device counters, from its exit summary (sd_run_finish: "swapdev uffd: N
 * swap-ins (P pages), M swap-outs (Q pages)"); -1 if it printed none (it never paged). */
struct child_result {
	int status;
	long long in_pages, out_pages;
};

/* Read the child's stderr (fd) to its end and wait for it. */
static struct child_result reap(pid_t pid, int fd)
{
	struct child_result c = {-1, -1, -1};
	char buf[16384], *s;
	size_t n = 0;
	ssize_t k;
	char sink[4096];
	unsigned long long a, b, x, y;

	while ((k = read(fd, n < sizeof(buf) - 1 ? buf + n : sink,
			 n < sizeof(buf) - 1 ? sizeof(buf) - 1 - n : sizeof(sink))) > 0)
		if (n < sizeof(buf) - 1)
			n += (size_t)k;
	buf[n] = 0;
	close(fd);
	if (waitpid(pid, &c.status, 0) != pid)
		perror("waitpid");
	s = strstr(buf, "swapdev uffd: ");
	if (s && sscanf(s, "swapdev uffd: %llu swap-ins (%llu pages), %llu swap-outs (%llu pages)",
			&a, &b, &x, &y) == 4) {
		c.in_pages = (long long)b;
		c.out_pages = (long long)y;
	}
	if (c.status != 0 || c.in_pages < 0)
		fprintf(stderr, "child %d: status %#x, its stderr:\n%s", (int)pid, c.status, buf);
	return c;
}

/* Fork; the child runs body with its stderr on a pipe and exits (the device's destructor
 * prints its summary there); the parent reads it. */
static struct child_result in_child(void (*body)(void))
{
	int fds[2];
	pid_t pid;

	fflush(NULL);
	if (pipe(fds)) {
		perror("pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		close(fds[0]);
		alarm(60);
		dup2(fds[1], 2);
		close(fds[1]);
		body();
		exit(failures != 0);
	}
	close(fds[1]);
	return reap(pid, fds[0]);
}

static char *fork_p, *fork_q;

static void child_reads_and_writes(void)
{
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	CHECK_EQ(bad_pages_all(fork_q, REGION, 0), 0);
	fill_all(fork_p, REGION, 1);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 1), 0);
}

static void fork_after_eviction(void)
{
	struct child_result c;

	fork_p = map_region();
	fork_q = map_region();
	fill_all(fork_p, REGION, 0);
	fill_all(fork_q, REGION, 0); /* 1024 pages, 64 local: at least 960 remote */
	c = in_child(child_reads_and_writes);
	CHECK_EQ(c.status, 0);
	/* Each page remote at the fork is read once by the child: a swap-in from its device;
	 * its 64-page budget then sends at least 960 - 64 of them out again. */
	CHECK_EQ(c.in_pages >= 2 * (long long)(REGION / PG) - (long long)(BUDGET / PG), 1);
	CHECK_EQ(c.out_pages >= 2 * (long long)(REGION / PG) - 2 * (long long)(BUDGET / PG), 1);
	printf("fork_after_eviction: the child's device: %lld pages in, %lld out\n", c.in_pages,
	       c.out_pages);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0); /* the child's writes stayed its own */
	CHECK_EQ(bad_pages_all(fork_q, REGION, 0), 0);
	munmap(fork_p, REGION);
	munmap(fork_q, REGION);
}

static atomic_int busy_stop;
static atomic_long busy_passes;

/* Rewrite the pattern over fork_p, page after page, until told to stop: every write of a
 * remote page faults, every fault past the budget evicts. */
static void *busy_writer(void *arg)
{
	size_t start = (size_t)(uintptr_t)arg * (REGION / 2);

	while (!atomic_load(&busy_stop)) {
		for (size_t i = 0; i < REGION; i += PG) {
			size_t off = (start + i) % REGION;

			fill_all(fork_p + off, PG, 0);
		}
		atomic_fetch_add(&busy_passes, 1);
	}
	return NULL;
}

/* Ends with _exit, as a forked Python worker does (os._exit): the device still writes its
 * summary. */
static void child_reads_both(void)
{
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	CHECK_EQ(bad_pages_all(fork_q, REGION, 0), 0);
	_exit(failures != 0);
}

static void fork_from_busy_threads(void)
{
	pthread_t t[2];
	int forks = 16;

	fork_p = map_region();
	fork_q = map_region();
	fill_all(fork_p, REGION, 0);
	fill_all(fork_q, REGION, 0);
	atomic_store(&busy_stop, 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, busy_writer, (void *)(uintptr_t)i);
	while (atomic_load(&busy_passes) < 2)
		;
	for (int i = 0; i < forks; i++) {
		struct child_result c = in_child(child_reads_both);

		/* At most the 64-page budget was local at the fork: 960 pages read remote. */
		CHECK_EQ(c.status, 0);
		CHECK_EQ(c.in_pages >= 2 * (long long)(REGION / PG) - (long long)(BUDGET / PG), 1);
	}
	atomic_store(&busy_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	CHECK_EQ(bad_pages_all(fork_q, REGION, 0), 0);
	munmap(fork_p, REGION);
	munmap(fork_q, REGION);
}

/* As a launcher's forked child before its exec, or a daemon: close every descriptor from
 * 3 up (CPython's subprocess does so with close_range), then read the parent's pages. */
static void child_closes_descriptors(void)
{
	CHECK_EQ(close_range(3, ~0u, 0), 0);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	fill_all(fork_q, REGION, 3); /* no device: plain memory */
	CHECK_EQ(bad_pages_all(fork_q, REGION, 3), 0);
}

static void fork_child_closes_descriptors(void)
{
	fork_p = map_region();
	fork_q = map_region();
	fill_all(fork_p, REGION, 0); /* 448 pages remote at least */
	CHECK_EQ(in_child(child_closes_descriptors).status, 0);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	munmap(fork_p, REGION);
	munmap(fork_q, REGION);
}

/* CPython's subprocess vforks, and the child closes every descriptor from 3 up with
 * close_range before its exec. The child shares the parent's memory, so the device must
 * not stop there: afterwards the parent's pages read exactly and its device still holds a
 * fresh region to its budget (mincore: at most BUDGET of it resident after filling it;
 * with the device stopped, all of it would be). */
/* vfork a child that closes every descriptor from 3 up and exits: its exit status. */
static int vfork_close_range(void)
{
	int status = -1;
	pid_t pid = vfork();

	if (pid == 0)
		_exit(close_range(3, ~0u, 0) == 0 ? 0 : 3);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void vfork_child_closes_descriptors(void)
{
	static unsigned char vec[REGION / PG];
	unsigned long resident = 0;
	char *q;

	fork_p = map_region();
	fill_all(fork_p, REGION, 0); /* 448 pages remote at least */
	CHECK_EQ(vfork_close_range(), 0);
	CHECK_EQ(bad_pages_all(fork_p, REGION, 0), 0);
	q = map_region();
	fill_all(q, REGION, 4);
	CHECK_EQ(mincore(q, REGION, vec), 0);
	for (size_t i = 0; i < REGION / PG; i++)
		resident += vec[i] & 1;
	CHECK_EQ(resident <= BUDGET / PG, 1);
	CHECK_EQ(bad_pages_all(q, REGION, 4), 0);
	munmap(q, REGION);
	munmap(fork_p, REGION);
}

/* A file mapped with MAP_FIXED over the middle of a region (the device forgets those pages
 * and keeps the rest registered): a child forked then registers around it and reads the
 * region's remote pages exactly, and the file's bytes. */
static void child_reads_around_file(void)
{
	CHECK_EQ(bad_pages_all(fork_p, REGION / 4, 0), 0);
	CHECK_EQ(bad_pages_all(fork_p + REGION / 2, REGION / 2, 0), 0);
	CHECK_EQ(((const unsigned char *)fork_p)[REGION / 4 + 5], 0x5a);
}

static void fork_around_a_file_mapping(void)
{
	char path[] = "/tmp/test_uffd_mappings.XXXXXX";
	int fd = mkstemp(path);
	char *f;

	CHECK_EQ(fd >= 0, 1);
	if (fd < 0)
		return;
	unlink(path);
	CHECK_EQ(ftruncate(fd, REGION / 4), 0);
	fork_p = map_region();
	fill_all(fork_p, REGION, 0);
	f = mmap(fork_p + REGION / 4, REGION / 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
		 fd, 0);
	CHECK_EQ(f == fork_p + REGION / 4, 1);
	f[5] = 0x5a;
	churn(); /* the region's pages go remote (its other regions' too) */
	CHECK_EQ(in_child(child_reads_around_file).status, 0);
	CHECK_EQ(bad_pages_all(fork_p + REGION / 2, REGION / 2, 0), 0);
	munmap(fork_p, REGION);
	close(fd);
}

/* The exec'd image (argv[2] "exec-child"): fill a region and read it back under its own
 * device: at least 448 pages out while filling, 448 in while reading. */
static int exec_child(void)
{
	char *p = map_region();

	fill_all(p, REGION, 7);
	CHECK_EQ(bad_pages_all(p, REGION, 7), 0);
	return failures != 0;
}

static void check_exec_child(struct child_result c)
{
	long long remote = (long long)((REGION - BUDGET) / PG);

	CHECK_EQ(c.status, 0);
	CHECK_EQ(c.in_pages >= remote, 1);
	CHECK_EQ(c.out_pages >= remote, 1);
}

static void fork_then_exec(void)
{
	char *p = map_region();
	char *args[] = {"test_uffd_mappings", self_lib, "exec-child", NULL};
	int fds[2];
	pid_t pid;

	fill_all(p, REGION, 0); /* remote in the parent */
	fflush(NULL);
	if (pipe(fds)) {
		perror("pipe");
		exit(1);
	}
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(fds[1]);
	check_exec_child(reap(pid, fds[0]));
	CHECK_EQ(bad_pages_all(p, REGION, 0), 0);
	munmap(p, REGION);
}

static void spawn_then_exec(void)
{
	char *p = map_region();
	char *args[] = {"test_uffd_mappings", self_lib, "exec-child", NULL};
	posix_spawn_file_actions_t fa;
	int fds[2];
	pid_t pid;

	fill_all(p, REGION, 0);
	if (pipe(fds)) {
		perror("pipe");
		exit(1);
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	CHECK_EQ(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	check_exec_child(reap(pid, fds[0]));
	CHECK_EQ(bad_pages_all(p, REGION, 0), 0);
	munmap(p, REGION);
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
	{"fork_after_eviction", fork_after_eviction},
	{"fork_from_busy_threads", fork_from_busy_threads},
	{"fork_child_closes_descriptors", fork_child_closes_descriptors},
	{"vfork_child_closes_descriptors", vfork_child_closes_descriptors},
	{"fork_around_a_file_mapping", fork_around_a_file_mapping},
	{"fork_then_exec", fork_then_exec},
	{"spawn_then_exec", spawn_then_exec},
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
	self_lib = argv[1];
	if (argc >= 3 && !strcmp(argv[2], "exec-child"))
		return exec_child();
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
