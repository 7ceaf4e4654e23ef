/*
 * The uffd device's shared anonymous memory (src/uffd_shmem.c): a MAP_SHARED |
 * MAP_ANONYMOUS region of 1024 pages shared by a process and the child it forks, with
 * SWAPDEV_SHARED_LOCAL_FRACTION = 1/16 (a 64-page budget for the region, both processes
 * together) and the default 32-page eviction batch (FIFO over the region).
 *
 * "sweeps": four sequential sweeps of pages 0..1023, one process at a time:
 *   1. the parent writes word A on every page (1024 first touches: no fetch);
 *   2. the child checks A and writes word B on every page;
 *   3. the parent checks A and B;
 *   4. the child checks A and B again.
 * Hand-derived oracle (64-page FIFO budget, batch 32): a sweep of 1024 pages leaves pages
 * 960..1023 resident (the budget fills at page 63; from page 64 every 32nd page evicts the
 * 32 oldest, 30 batches up to page 1023). A later sweep from page 0 finds page 0 remote,
 * and it has evicted every page of 960..1023 before it reaches page 960 (it makes 960 pages
 * resident first), so each of its 1024 accesses is a fetch: the parent fetches 1024 (sweep
 * 3) and the child 2048 (sweeps 2 and 4); swap-outs: the parent 960 + 1024 = 1984, the child
 * 2 x 1024 = 2048; the region's resident count peaks at exactly 64. The other process's
 * PTEs: at the end of a sweep the sweeping process maps pages 960..1023, and the next
 * sweep (the other process) evicts them while it is idle: the idle process applies the
 * log's entries for those 64 pages while they are still mapped, so the parent counts 2 x 64
 * = 128 pages "mapped when zapped" (sweeps 2 and 4) of 2048 zapped for the child, the child
 * 64 (sweep 3) of 960 + 1024 = 1984 zapped for the parent (it was forked before sweep 1).
 * Every word reads back exactly in both processes.
 *
 * "concurrent": both processes sweep the region at once, each writing its own word on every
 * page and checking the other's earlier words, 8 rounds: every word exact at the end in
 * both, the resident peak within the budget; the exit summaries give the late zaps
 * (not an oracle: their number depends on the timing).
 *
 * "node-concurrent" (ctest swapdev-uffd-shmem-node): the concurrent case on a 128-page node,
 * where the region is in the node's budget (check_node_concurrent below).
 *
 * Run without arguments after the library it re-executes itself as "run CASE" with the
 * device preloaded (SWAPDEV_TEST_PRELOAD overrides LD_PRELOAD: an AddressSanitizer run
 * puts libasan first) and checks the exit summaries the two processes print; exits 77
 * (skipped) where userfaultfd is not permitted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/uffd_node.h"
#include "check.h"

#define PG 4096ul
#define NPAGES 1024ul
#define BUDGET 64ul
#define NODE_BUDGET 128ul /* node-concurrent's */

static char *region;

static uint64_t word_of(uint64_t page, uint64_t who, uint64_t round)
{
	return (page + 1) * 0x9E3779B97F4A7C15ull ^ (who << 56) ^ (round << 40);
}

/* Slot of (who, round) in a page: 8 words apart, wrapping within the page. */
static uint64_t *slot(uint64_t page, uint64_t who, uint64_t round)
{
	return (uint64_t *)(region + page * PG) + ((who * 64 + round * 8) % (PG / 8));
}

static unsigned long bad_words(uint64_t who, uint64_t round)
{
	unsigned long bad = 0;

	for (uint64_t p = 0; p < NPAGES; p++)
		if (*slot(p, who, round) != word_of(p, who, round))
			bad++;
	return bad;
}

static void write_words(uint64_t who, uint64_t round)
{
	for (uint64_t p = 0; p < NPAGES; p++)
		*slot(p, who, round) = word_of(p, who, round);
}

/* One sweep: on each page, check the words of writers 0..nwho-1 (round 0), then write
 * writer `write`'s word if write >= 0; returns the wrong words. */
static unsigned long sweep(uint64_t nwho, int write)
{
	unsigned long bad = 0;

	for (uint64_t p = 0; p < NPAGES; p++) {
		for (uint64_t w = 0; w < nwho; w++)
			bad += *slot(p, w, 0) != word_of(p, w, 0);
		if (write >= 0)
			*slot(p, (uint64_t)write, 0) = word_of(p, (uint64_t)write, 0);
	}
	return bad;
}

static void xread(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1) {
		perror("test_uffd_shmem: read");
		_exit(1);
	}
}

static void xwrite(int fd)
{
	if (write(fd, "x", 1) != 1) {
		perror("test_uffd_shmem: write");
		_exit(1);
	}
}

static int run_sweeps(void)
{
	int to_child[2], to_parent[2], status = 0;
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent))
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		/* Registered (the device's fork handler ran before fork returned here): the
		 * oracle counts every eviction of sweep 1 as one this child zaps. Without this
		 * the parent could evict its first batches before the child counted itself in
		 * the region (child.zapped 1920 of 1984, 1 run in 57). */
		xwrite(to_parent[1]);
		xread(to_child[0]);
		CHECK_EQ(sweep(1, 1), 0); /* 2. */
		xwrite(to_parent[1]);
		xread(to_child[0]);
		CHECK_EQ(sweep(2, -1), 0); /* 4. */
		exit(failures != 0);
	}
	xread(to_parent[0]); /* the child is in the region */
	CHECK_EQ(sweep(0, 0), 0); /* 1. */
	xwrite(to_child[1]);
	xread(to_parent[0]);
	CHECK_EQ(sweep(2, -1), 0); /* 3. */
	xwrite(to_child[1]);
	waitpid(pid, &status, 0);
	CHECK_EQ(status, 0);
	return failures != 0;
}

static int run_concurrent(void)
{
	int status = 0, go[2];
	pid_t pid;

	if (pipe(go))
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	for (uint64_t round = 0; round < 8; round++) {
		uint64_t who = pid == 0;

		if (round == 0 && pid == 0)
			xread(go[0]);
		if (round == 0 && pid > 0)
			xwrite(go[1]);
		write_words(who, round);
		CHECK_EQ(bad_words(who, round), 0);
	}
	if (pid == 0) {
		/* The parent's words of every round: its sweeps may still run, so only the
		 * words it has certainly written are checked after it is done (below). */
		exit(failures != 0);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ(status, 0);
	for (uint64_t round = 0; round < 8; round++)
		CHECK_EQ(bad_words(0, round) + bad_words(1, round), 0);
	return failures != 0;
}

struct summary {
	long long in_pages, out_pages;
	unsigned long long npages, budget, max_held, max_res, max_evicting, forced;
	unsigned long long first, fetches, minor, kept, waited, evicted;
	unsigned long long zapped, mapped, overruns;
	double lag_mean_us, lag_max_us;
};

/* Parse the k-th (0-based) pair of exit summaries in text; -1 if absent. */
static int parse(const char *text, int k, struct summary *s)
{
	const char *u = text, *h = text;
	unsigned long long a, x;

	for (int i = 0; i <= k; i++) {
		u = strstr(i ? u + 1 : u, "swapdev uffd: ");
		h = strstr(i ? h + 1 : h, "swapdev uffd shmem: ");
		if (!u || !h)
			return -1;
	}
	if (sscanf(u, "swapdev uffd: %llu swap-ins (%lld pages), %llu swap-outs (%lld pages)", &a,
		   &s->in_pages, &x, &s->out_pages) != 4)
		return -1;
	if (sscanf(h,
		   "swapdev uffd shmem: %llu pages, budget %llu, max held %llu, max resident %llu "
		   "(%llu evicting at most), %llu forced; here: %llu first touches, %llu "
		   "fetches, %llu minor, %llu kept, %llu waited, %llu evicted; %llu zapped for "
		   "others, %llu mapped when zapped (lag mean %lf us, max %lf us), %llu "
		   "overruns",
		   &s->npages, &s->budget, &s->max_held, &s->max_res, &s->max_evicting, &s->forced,
		   &s->first, &s->fetches, &s->minor, &s->kept, &s->waited, &s->evicted, &s->zapped,
		   &s->mapped, &s->lag_mean_us, &s->lag_max_us, &s->overruns) != 17)
		return -1;
	return 0;
}

/* Run "run CASE" with the device preloaded, on node segment node_shm if not NULL; its
 * stderr (both processes') into buf. */
static int spawn_case(const char *self, const char *lib, const char *name, const char *node_shm,
		      char *buf, size_t cap)
{
	int fds[2], status = -1;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		const char *pre = getenv("SWAPDEV_TEST_PRELOAD");

		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_PRELOAD", pre && *pre ? pre : lib, 1);
		/* On a node: its budget 128 pages, twice the region's own budget off a node. */
		setenv("SWAPDEV_LOCAL_BYTES", node_shm ? "524288" : "262144", 1);
		setenv("SWAPDEV_SHARED_LOCAL_FRACTION", "0.0625", 1); /* 64 of 1024 pages */
		setenv("SWAPDEV_EVICT_BATCH", "32", 1);
		if (node_shm)
			setenv("SWAPDEV_NODE_SHM", node_shm, 1);
		else
			unsetenv("SWAPDEV_NODE_SHM");
		unsetenv("SWAPDEV_MODEL");
		alarm(60);
		execl(self, self, "run", name, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (n < cap - 1 && (k = read(fds[0], buf + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return status;
}

static void check_sweeps(const char *self, const char *lib)
{
	static char buf[65536];
	struct summary child, parent;
	int status = spawn_case(self, lib, "sweeps", NULL, buf, sizeof(buf));

	CHECK_EQ(status, 0);
	/* The child exits first (the parent waits for it): its summaries come first. */
	if (parse(buf, 0, &child) || parse(buf, 1, &parent)) {
		fprintf(stderr, "sweeps: no exit summaries in:\n%s", buf);
		failures++;
		return;
	}
	CHECK_EQ(parent.npages, NPAGES);
	CHECK_EQ(parent.budget, BUDGET);
	CHECK_EQ(parent.max_held, BUDGET);
	CHECK_EQ(parent.max_res >= BUDGET, 1);
	CHECK_EQ(parent.forced, 0);
	CHECK_EQ(parent.first, NPAGES);
	CHECK_EQ(parent.fetches, NPAGES);
	CHECK_EQ(parent.in_pages, NPAGES);
	CHECK_EQ(parent.evicted, 1984);
	CHECK_EQ(parent.out_pages, 1984);
	CHECK_EQ(child.first, 0);
	CHECK_EQ(child.fetches, 2 * NPAGES);
	CHECK_EQ(child.in_pages, 2 * NPAGES);
	CHECK_EQ(child.evicted, 2 * NPAGES);
	CHECK_EQ(child.out_pages, 2 * NPAGES);
	CHECK_EQ(parent.minor + child.minor + parent.kept + child.kept, 0);
	CHECK_EQ(parent.waited + child.waited, 0);
	CHECK_EQ(parent.zapped, 2 * NPAGES);
	CHECK_EQ(parent.mapped, 2 * BUDGET);
	CHECK_EQ(child.zapped, 1984);
	CHECK_EQ(child.mapped, BUDGET);
	CHECK_EQ(parent.overruns + child.overruns, 0);
	fprintf(stderr, "sweeps: resident at most %llu (%llu evicting, still mapped elsewhere); "
		"zapped while mapped: parent %llu (lag mean %.1f us, max %.1f us), child %llu "
		"(mean %.1f us, max %.1f us)\n", parent.max_res, parent.max_evicting,
		parent.mapped, parent.lag_mean_us, parent.lag_max_us, child.mapped,
		child.lag_mean_us, child.lag_max_us);
	if (failures)
		fputs(buf, stderr);
}

static void check_concurrent(const char *self, const char *lib)
{
	static char buf[65536];
	struct summary child, parent;
	int status = spawn_case(self, lib, "concurrent", NULL, buf, sizeof(buf));

	CHECK_EQ(status, 0);
	if (parse(buf, 0, &child) || parse(buf, 1, &parent)) {
		fprintf(stderr, "concurrent: no exit summaries in:\n%s", buf);
		failures++;
		return;
	}
	CHECK_EQ(parent.max_held <= BUDGET, 1);
	CHECK_EQ(parent.forced, 0);
	CHECK_EQ(parent.first + child.first, NPAGES);
	CHECK_EQ(parent.fetches + child.fetches > 0, 1);
	fprintf(stderr, "concurrent: fetches %llu + %llu, minor %llu + %llu, kept %llu + %llu, "
		"waited %llu + %llu, resident at most %llu (held %llu, evicting %llu), zapped "
		"while mapped %llu of %llu (parent, lag max %.1f us) and %llu of %llu (child, "
		"lag max %.1f us)\n", parent.fetches, child.fetches, parent.minor, child.minor,
		parent.kept, child.kept, parent.waited, child.waited, parent.max_res,
		parent.max_held, parent.max_evicting, parent.mapped, parent.zapped,
		parent.lag_max_us, child.mapped, child.zapped, child.lag_max_us);
	if (failures)
		fputs(buf, stderr);
}

/*
 * "node-concurrent": the concurrent case on a node (SWAPDEV_NODE_SHM, a 128-page budget:
 * SWAPDEV_LOCAL_BYTES), where the region has no budget of its own (off a node it would
 * have 64 pages) and its pages are the node's count, which reaches the node's budget
 * (the peak, sampled after every fault, is 128 or a few faults in flight more: every page
 * here is shared; doc/swapdev.md, "One budget per node"). Both processes evict from the
 * region and wait, at the budget, for each other's zaps of the pages being evicted: every
 * word exact (no deadlock: each waiting handler applies its own log), no eviction forced,
 * no fallback (no wait of 500 ms in vain), the node's peak and the region's pages held
 * within the budget and a batch (the faults in flight), the lines say "on the node", and
 * the node's count is 0 once both have exited (the region leaves with its last process).
 */
static void check_node_concurrent(const char *self, const char *lib)
{
	static char buf[65536];
	struct summary child, parent;
	char name[64];
	struct sd_node *seg;
	int status, fd;

	snprintf(name, sizeof(name), "/swapdev-test-shmem-node-%d", (int)getpid());
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*seg))) {
		perror(name);
		failures++;
		return;
	}
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	status = spawn_case(self, lib, "concurrent", name, buf, sizeof(buf));
	shm_unlink(name);
	if (seg == MAP_FAILED) {
		failures++;
		return;
	}
	CHECK_EQ(status, 0);
	if (parse(buf, 0, &child) || parse(buf, 1, &parent)) {
		fprintf(stderr, "node-concurrent: no exit summaries in:\n%s", buf);
		failures++;
		return;
	}
	CHECK_EQ(atomic_load(&seg->budget_pages), NODE_BUDGET);
	CHECK_EQ(parent.budget, NODE_BUDGET);
	CHECK_EQ(strstr(buf, "on the node") != NULL, 1);
	CHECK_EQ(parent.forced, 0);
	CHECK_EQ(parent.first + child.first, NPAGES);
	CHECK_EQ(atomic_load(&seg->fallbacks), 0);
	CHECK_EQ(parent.max_held >= NODE_BUDGET && parent.max_held <= NODE_BUDGET + 32, 1);
	CHECK_EQ(atomic_load(&seg->peak) >= NODE_BUDGET, 1);
	CHECK_EQ(atomic_load(&seg->peak) <= NODE_BUDGET + 32, 1);
	CHECK_EQ(atomic_load(&seg->resident), 0);
	CHECK_EQ(atomic_load(&seg->shared_resident), 0);
	CHECK_EQ(atomic_load(&seg->shared_evicting), 0);
	fprintf(stderr, "node-concurrent: fetches %llu + %llu, kept %llu + %llu, node peak %llu, "
		"resident at most %llu (held %llu, evicting %llu), zapped while mapped %llu of %llu "
		"(parent) and %llu of %llu (child)\n", parent.fetches, child.fetches, parent.kept,
		child.kept, (unsigned long long)atomic_load(&seg->peak), parent.max_res,
		parent.max_held, parent.max_evicting, parent.mapped, parent.zapped, child.mapped,
		child.zapped);
	if (failures)
		fputs(buf, stderr);
	munmap(seg, sizeof(*seg));
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "run")) {
		region = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
		if (region == MAP_FAILED)
			return 2;
		if (!strcmp(argv[2], "sweeps"))
			return run_sweeps();
		if (!strcmp(argv[2], "concurrent"))
			return run_concurrent();
		return 2;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBSWAPDEV_UFFD.so [CASE]\n", argv[0]);
		return 2;
	}
	{
		long fd = syscall(SYS_userfaultfd, 0);

		if (fd < 0) {
			fprintf(stderr, "userfaultfd: %s: skipped\n", strerror(errno));
			return 77;
		}
		close((int)fd);
	}
	if (argc < 3 || !strcmp(argv[2], "sweeps"))
		check_sweeps("/proc/self/exe", argv[1]);
	if (argc < 3 || !strcmp(argv[2], "concurrent"))
		check_concurrent("/proc/self/exe", argv[1]);
	if (argc >= 3 && !strcmp(argv[2], "node-concurrent"))
		check_node_concurrent("/proc/self/exe", argv[1]);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
