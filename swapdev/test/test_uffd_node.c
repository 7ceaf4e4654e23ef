/*
 * One local budget per node (src/uffd_node.h, SWAPDEV_NODE_SHM): device processes of one
 * node share a 64-page budget; eviction across them follows the node's global FIFO order.
 * The test (not preloaded) creates the segment, starts worker processes exec'd with the
 * device preloaded (each a 2 MiB region, 4 KiB pages filled with a pattern of its own seed,
 * driven over pipes), samples the segment from a thread, and checks:
 *   - A fills 64 pages and blocks; B fills 64 pages: A's pages are the node's oldest, so A
 *     gives up all 64 (>= 64 - one batch) on B's requests and B sends nothing remote while A
 *     still holds a local page; B fills 32 more: B evicts its own (A has none left); the
 *     node's resident count never exceeds budget + one batch (every sample, and the
 *     segment's peak); then A reads every word of its 64 pages exactly (its faults make B
 *     give up pages in turn);
 *   - C fills 64 pages and is SIGKILLed (not reaped: a zombie, as a worker its daemon has
 *     not waited for yet); D fills 64 pages: C's slot is reclaimed (the node's count drops
 *     by C's 64 pages), D proceeds without a swap-out and without a fallback;
 *   - a victim that cannot answer (SIGSTOP): D's first fault waits 500 ms for it and falls
 *     back (one fallback counted, not one per fault), D fills and reads its pages exactly,
 *     and so does the victim once continued;
 *   - E fills 64 pages and forks: the child reads E's pattern exactly, fills 64 pages of
 *     its own and reads both exactly; E then reads its own exactly;
 *   - a copy-on-write page counts once (cow_charge: G forks K; K's copy-on-write breaks
 *     and G's dropped pages move the charge to K; the count equals the kernel's Pss);
 *   - when every worker has exited, the node's count is 0.
 * "shared" (ctest swapdev-uffd-node-shared, its own segment): a shared anonymous region on
 * the node counts in the node's budget once, its oldest pages going first (shared_region:
 * hand-derived counts, the kernel's Pss and pagemap at every step, the exit summaries).
 * argv[1]: the library (preloaded after the test's own LD_PRELOAD, if any: libasan.so for
 * a sanitizer build); argv[2] "shared": that case only. Exits 77 (skipped) where userfaultfd is not permitted. alarm(60).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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
#define REGION (2ul << 20)
#define BUDGET_PAGES 64
#define BATCH 32
#define SHARED_PAGES 256 /* 1 MiB: SWAPDEV_MIN_MAP_BYTES' default */
/* A condition, reported as CHECK_EQ reports a value (its text, then 0 against 1). */
#define CHECK(cond) CHECK_EQ(!!(cond), 1)

static char shm_name[64];
static struct sd_node *seg;
/* The shared case ("shared"): workers may map a shared region (SWAPDEV_SHARED_LOCAL_FRACTION
 * set) and write their stderr to err_path (their exit summaries, checked). */
static int shared_case;
static char err_path[64];

/* ---- the worker (preloaded) ---- */

static uint64_t word(uint64_t seed, uint64_t page, uint64_t i)
{
	return seed * 0x9e3779b97f4a7c15ull ^ (page << 20) ^ i;
}

static void fill(char *p, uint64_t seed, uint64_t first, uint64_t n)
{
	for (uint64_t pg = first; pg < first + n; pg++)
		for (uint64_t i = 0; i < PG / 8; i++)
			((volatile uint64_t *)(p + pg * PG))[i] = word(seed, pg, i);
}

/* Expected in a page the worker dropped (MADV_DONTNEED): zeros. */
#define ZEROS UINT64_MAX

static uint64_t bad_page(const char *p, uint64_t seed, uint64_t pg)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < PG / 8; i++)
		bad += ((volatile const uint64_t *)(p + pg * PG))[i] !=
		       (seed == ZEROS ? 0 : word(seed, pg, i));
	return bad;
}

static uint64_t bad_words(const char *p, uint64_t seed, uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t pg = 0; pg < n; pg++)
		bad += bad_page(p, seed, pg);
	return bad;
}

static void reply(int out, const char *fmt, unsigned long long v)
{
	char buf[64];
	int len = snprintf(buf, sizeof(buf), fmt, v);

	if (write(out, buf, (size_t)len) != len)
		_exit(3);
}

/* A worker's memory: the region, the pages filled, and each page's pattern (its seed);
 * the shared region ("S", MAP_SHARED | MAP_ANONYMOUS) if mapped. */
struct wstate {
	char *p, *sh;
	uint64_t seed, filled, expect[REGION / PG];
};

/* A persistent forked child of the worker, driven through the worker ("g CMD"). */
static pid_t kid;
static FILE *kid_to, *kid_from;

static int serve(struct wstate *w, FILE *in, int out);

/* "F": fork a child that serves commands on pipes of its own (the same memory, copied on
 * write); reply its pid. */
static void fork_kid(struct wstate *w, int out)
{
	int down[2], up[2];

	if (pipe(down) || pipe(up))
		_exit(3);
	kid = fork();
	if (kid == 0) {
		FILE *in = fdopen(down[0], "r");

		close(down[1]);
		close(up[0]);
		_exit(in ? serve(w, in, up[1]) : 3);
	}
	close(down[0]);
	close(up[1]);
	kid_to = fdopen(down[1], "w");
	kid_from = fdopen(up[0], "r");
	setvbuf(kid_to, NULL, _IOLBF, 0);
	reply(out, "F %llu\n", (unsigned long long)kid);
}

/* "g CMD": CMD to the child, its reply back ("g q": its exit status). */
static void relay(const char *cmd, int out)
{
	char line[64];
	int status;

	fputs(cmd, kid_to);
	if (cmd[0] == 'q') {
		fclose(kid_to);
		fclose(kid_from);
		waitpid(kid, &status, 0);
		reply(out, "Q %llu\n", (unsigned long long)status);
		return;
	}
	if (!fgets(line, sizeof(line), kid_from))
		_exit(3);
	if (write(out, line, strlen(line)) != (ssize_t)strlen(line))
		_exit(3);
}

static int worker(uint64_t seed)
{
	static struct wstate w;
	FILE *in = fdopen(0, "r");

	w.seed = seed;
	w.p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w.p == MAP_FAILED || !in)
		return 3;
	return serve(&w, in, 1);
}

/* Commands on in, one per line, replies on out: "t K" fill the next K pages; "c" read every
 * filled page (reply the bad words); "w K" write pages 0..K-1 anew (pattern seed + 100);
 * "d A K" drop pages A..A+K-1 (MADV_DONTNEED: they read zeros); "f" fork a child that reads
 * them, fills 64 pages of its own and reads both (reply its exit status); "F" fork a child
 * that serves these commands ("g CMD", "g q" its exit); "S" map the shared region (reply
 * its address); "s A K SEED" write shared pages A..A+K-1 with SEED's pattern; "r A K SEED"
 * read them (reply the bad words); "q" exit. */
static int serve(struct wstate *w, FILE *in, int out)
{
	char *p = w->p, line[64];
	uint64_t seed = w->seed;

	while (fgets(line, sizeof(line), in)) {
		unsigned long long k, a, sd;

		if (sscanf(line, "t %llu", &k) == 1) {
			fill(p, seed, w->filled, k);
			for (uint64_t pg = w->filled; pg < w->filled + k; pg++)
				w->expect[pg] = seed;
			w->filled += k;
			reply(out, "R %llu\n", w->filled);
		} else if (sscanf(line, "w %llu", &k) == 1) {
			fill(p, seed + 100, 0, k);
			for (uint64_t pg = 0; pg < k; pg++)
				w->expect[pg] = seed + 100;
			reply(out, "W %llu\n", k);
		} else if (sscanf(line, "d %llu %llu", &a, &k) == 2) {
			int rc = madvise(p + a * PG, k * PG, MADV_DONTNEED);

			for (uint64_t pg = a; pg < a + k; pg++)
				w->expect[pg] = ZEROS;
			reply(out, "D %llu\n", (unsigned long long)(rc != 0));
		} else if (line[0] == 'c') {
			uint64_t bad = 0;

			for (uint64_t pg = 0; pg < w->filled; pg++)
				bad += bad_page(p, w->expect[pg], pg);
			reply(out, "B %llu\n", bad);
		} else if (line[0] == 'S' && !w->sh) {
			w->sh = mmap(NULL, SHARED_PAGES * PG, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			if (w->sh == MAP_FAILED)
				return 3;
			reply(out, "S %llu\n", (unsigned long long)(uintptr_t)w->sh);
		} else if (sscanf(line, "s %llu %llu %llu", &a, &k, &sd) == 3 && w->sh) {
			fill(w->sh, sd, a, k);
			reply(out, "s %llu\n", k);
		} else if (sscanf(line, "r %llu %llu %llu", &a, &k, &sd) == 3 && w->sh) {
			uint64_t bad = 0;

			for (uint64_t pg = a; pg < a + k; pg++)
				bad += bad_page(w->sh, sd, pg);
			reply(out, "r %llu\n", bad);
		} else if (line[0] == 'F') {
			fork_kid(w, out);
		} else if (line[0] == 'g' && line[1] == ' ') {
			relay(line + 2, out);
		} else if (line[0] == 'f') {
			uint64_t filled = w->filled;
			int status;
			pid_t pid = fork();

			if (pid == 0) {
				uint64_t bad = bad_words(p, seed, filled);

				fill(p + filled * PG, seed + 1, 0, 64);
				bad += bad_words(p, seed, filled) + bad_words(p + filled * PG, seed + 1, 64);
				_exit(bad ? 1 : 0);
			}
			waitpid(pid, &status, 0);
			reply(out, "F %llu\n", (unsigned long long)status);
		} else if (line[0] == 'q') {
			return 0;
		}
	}
	return 0;
}

/* ---- the test (not preloaded) ---- */

struct proc {
	pid_t pid;
	FILE *to, *from;
};

static struct proc start(const char *lib, uint64_t seed)
{
	int in[2], out[2];
	char s[32];
	struct proc w;

	if (pipe(in) || pipe(out))
		exit(2);
	w.pid = fork();
	if (w.pid == 0) {
		char *argv[] = {"/proc/self/exe", (char *)lib, "worker", s, NULL};

		snprintf(s, sizeof(s), "%llu", (unsigned long long)seed);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		/* After a preload of the test's own (libasan.so for a sanitizer build). */
		if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD")) {
			static char both[4096];

			snprintf(both, sizeof(both), "%s %s", getenv("LD_PRELOAD"), lib);
			setenv("LD_PRELOAD", both, 1);
		} else {
			setenv("LD_PRELOAD", lib, 1);
		}
		setenv("SWAPDEV_LOCAL_BYTES", "262144", 1); /* 64 pages */
		setenv("SWAPDEV_NODE_SHM", shm_name, 1);
		if (shared_case) {
			/* 1/16: 16 pages of the region's 256 were its own budget off a node. */
			int fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

			setenv("SWAPDEV_SHARED_LOCAL_FRACTION", "0.0625", 1);
			setenv("SWAPDEV_EVICT_BATCH", "32", 1);
			if (fd >= 0)
				dup2(fd, 2);
		}
		execv("/proc/self/exe", argv);
		_exit(2);
	}
	close(in[0]);
	close(out[1]);
	w.to = fdopen(in[1], "w");
	w.from = fdopen(out[0], "r");
	setvbuf(w.to, NULL, _IOLBF, 0);
	return w;
}

/* Send cmd, return the number in the reply ("X n"). */
static unsigned long long ask(struct proc *w, const char *cmd)
{
	char line[64];
	unsigned long long v = ~0ull;

	fprintf(w->to, "%s\n", cmd);
	if (!fgets(line, sizeof(line), w->from) || sscanf(line + 1, " %llu", &v) != 1)
		fprintf(stderr, "test_uffd_node: worker %d: no reply to %s\n", (int)w->pid, cmd);
	return v;
}

static void stop(struct proc *w)
{
	int status;

	fprintf(w->to, "q\n");
	fclose(w->to);
	fclose(w->from);
	waitpid(w->pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* *word once it equals want, or its value after 1 s: the device counts a fault's page
 * right after the UFFDIO_COPY that wakes the faulting thread, so a worker's reply can come
 * before its last page is counted. */
static uint64_t settled(_Atomic uint64_t *word, uint64_t want)
{
	for (int i = 0; i < 1000 && atomic_load(word) != want; i++)
		usleep(1000);
	return atomic_load(word);
}

/* *word once it is at least want, or its value after 1 s (as settled). */
static uint64_t settled_ge(_Atomic uint64_t *word, uint64_t want)
{
	for (int i = 0; i < 1000 && atomic_load(word) < want; i++)
		usleep(1000);
	return atomic_load(word);
}

static struct sd_node_slot *slot_of(pid_t pid)
{
	for (int i = 0; i < SD_NODE_SLOTS; i++)
		if (atomic_load(&seg->slot[i].pid) == pid)
			return &seg->slot[i];
	return NULL;
}

/* The sampler: the node's largest resident count; while watching, samples at which B had
 * sent pages remote while A still held a local page. */
static atomic_int sampling = 1, watching;
static _Atomic uint64_t max_resident, order_violations;
static struct sd_node_slot *_Atomic slot_a, *_Atomic slot_b;

static void *sampler(void *arg)
{
	(void)arg;
	while (atomic_load(&sampling)) {
		uint64_t r = atomic_load(&seg->resident);
		struct sd_node_slot *a = atomic_load(&slot_a), *b = atomic_load(&slot_b);

		if (r > atomic_load(&max_resident))
			atomic_store(&max_resident, r);
		if (atomic_load(&watching) && a && b && atomic_load(&b->out_pages) &&
		    atomic_load(&a->local))
			atomic_fetch_add(&order_violations, 1);
	}
	return NULL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_uffd_node: timed out (60 s)\n";

	(void)sig;
	shm_unlink(shm_name);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	kill(0, SIGKILL);
	_exit(1);
}

static void two_processes(const char *lib)
{
	struct proc a = start(lib, 1), b;
	struct sd_node_slot *sa, *sb;

	CHECK_EQ(ask(&a, "t 64"), 64);
	sa = slot_of(a.pid);
	CHECK(sa != NULL);
	if (!sa)
		return;
	CHECK_EQ(settled(&sa->local, 64), 64);
	b = start(lib, 2);
	CHECK_EQ(ask(&b, "t 0"), 0);
	sb = slot_of(b.pid);
	CHECK(sb != NULL);
	if (!sb)
		return;
	atomic_store(&slot_a, sa);
	atomic_store(&slot_b, sb);
	atomic_store(&watching, 1);
	CHECK_EQ(ask(&b, "t 64"), 64);
	/* A's 64 pages were the node's oldest: all went remote, none of B's. */
	CHECK(settled_ge(&sa->out_pages, 64 - BATCH) >= 64 - BATCH);
	CHECK_EQ(settled(&sa->out_for_others, atomic_load(&sa->out_pages)),
		 atomic_load(&sa->out_pages));
	CHECK_EQ(atomic_load(&sb->out_pages), 0);
	CHECK_EQ(ask(&b, "t 32"), 96);
	atomic_store(&watching, 0);
	CHECK_EQ(settled(&sa->local, 0), 0);
	CHECK_EQ(atomic_load(&sb->out_pages), BATCH); /* its own oldest, A had none left */
	CHECK_EQ(atomic_load(&order_violations), 0);
	/* A reads its pattern back: every page is a remote fault, B gives up pages. */
	CHECK_EQ(ask(&a, "c"), 0);
	CHECK_EQ(settled(&sa->local, 64), 64);
	CHECK(settled_ge(&sb->out_for_others, 64 - BATCH) >= 64 - BATCH);
	CHECK_EQ(ask(&b, "c"), 0);
	CHECK_EQ(atomic_load(&seg->fallbacks), 0);
	stop(&a);
	stop(&b);
}

static void dead_victim(const char *lib)
{
	struct proc c = start(lib, 3), d;
	uint64_t reclaimed = atomic_load(&seg->reclaimed);
	struct sd_node_slot *sd;
	int status;

	CHECK_EQ(ask(&c, "t 64"), 64);
	CHECK_EQ(settled(&seg->resident, 64), 64);
	kill(c.pid, SIGKILL);
	/* Not reaped yet: a zombie, whose threads other than the leader are gone. */
	d = start(lib, 4);
	CHECK_EQ(ask(&d, "t 64"), 64);
	sd = slot_of(d.pid);
	CHECK(sd != NULL);
	CHECK(slot_of(c.pid) == NULL);
	CHECK_EQ(atomic_load(&seg->reclaimed), reclaimed + 1);
	CHECK_EQ(settled(&seg->resident, 64), 64); /* D's pages only: C's were subtracted */
	if (sd)
		CHECK_EQ(atomic_load(&sd->out_pages), 0);
	CHECK_EQ(atomic_load(&seg->fallbacks), 0);
	CHECK_EQ(ask(&d, "c"), 0);
	waitpid(c.pid, &status, 0);
	fclose(c.to);
	fclose(c.from);
	stop(&d);
}

/* A victim that cannot answer (stopped): the first fault waits 500 ms and falls back
 * (counted once), the next ones leave it out; nothing hangs, every word reads back. */
static void stopped_victim(const char *lib)
{
	struct proc c = start(lib, 6), d;
	uint64_t fallbacks = atomic_load(&seg->fallbacks);

	CHECK_EQ(ask(&c, "t 64"), 64);
	CHECK_EQ(settled(&seg->resident, 64), 64);
	kill(c.pid, SIGSTOP);
	d = start(lib, 7);
	CHECK_EQ(ask(&d, "t 64"), 64);
	CHECK_EQ(ask(&d, "c"), 0);
	CHECK_EQ(atomic_load(&seg->fallbacks), fallbacks + 1);
	kill(c.pid, SIGCONT);
	CHECK_EQ(ask(&c, "c"), 0);
	stop(&c);
	stop(&d);
}

/* The kB of Pss in pid's mappings registered with userfaultfd (smaps VmFlags "um"): its
 * share of the physical pages of its registered regions, a page mapped by two processes
 * counting half in each. The kernel's count, kept apart from the device's. */
static uint64_t registered_pss_kb(pid_t pid)
{
	char path[64], line[256];
	unsigned long long v, pss = 0;
	uint64_t sum = 0;
	FILE *f;

	if (!pid) /* no such process (the shared case's first step has one) */
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss: %llu kB", &v) == 1)
			pss = v;
		else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " um"))
			sum += pss;
	fclose(f);
	return sum;
}

/* The node's physical local pages by the kernel: both processes' registered Pss, in pages
 * (b = 0: a's only). */
static uint64_t physical_pages(pid_t a, pid_t b)
{
	return (registered_pss_kb(a) + registered_pss_kb(b)) / (PG / 1024);
}

/* The node's resident count once it equals the kernel's count of a and b's pages (the
 * device charges a page that stopped being shared within its 10 ms reconcile period), or
 * the kernel's count if that never happens within 1 s. */
static uint64_t resident_at_rest(pid_t a, pid_t b)
{
	uint64_t phys = physical_pages(a, b);

	for (int i = 0; i < 1000 && atomic_load(&seg->resident) != phys; i++) {
		usleep(1000);
		phys = physical_pages(a, b);
	}
	return phys;
}

static struct sd_node_slot *slot_of_soon(pid_t pid)
{
	struct sd_node_slot *s = NULL;

	for (int i = 0; i < 1000 && !(s = slot_of(pid)); i++)
		usleep(1000);
	return s;
}

/*
 * A copy-on-write page counts once, as the kernel charges it (to the memcg that faulted it,
 * until a write gives the other process a copy of its own). G fills 24 pages and forks K:
 *   - at rest after the fork the node's count is 24 (not 48), K's slot holds no page, and
 *     neither process sent a page remote (nothing needed room);
 *   - K writes pages 0-7 (8 copy-on-write breaks): K is charged 8, the count is 32;
 *   - G drops pages 16-23 (MADV_DONTNEED): G's count is 16, and K's copies of them, its own
 *     now, are charged to K (16), the count stays 32;
 *   - at every step the count equals the kernel's: the two processes' registered Pss;
 *   - K fills 40 pages more (the node pages: 72 pages wanted, 64 allowed): at rest the
 *     count again equals the kernel's, within the budget; both read every page exactly.
 */
static void cow_charge(const char *lib)
{
	struct proc g = start(lib, 8);
	struct sd_node_slot *sg, *sk;
	pid_t k;

	CHECK_EQ(ask(&g, "t 24"), 24);
	sg = slot_of(g.pid);
	CHECK(sg != NULL);
	if (!sg)
		return;
	CHECK_EQ(settled(&sg->local, 24), 24);
	k = (pid_t)ask(&g, "F");
	sk = slot_of_soon(k);
	CHECK(sk != NULL);
	if (!sk)
		return;
	usleep(50000); /* five reconcile periods */
	CHECK_EQ(atomic_load(&seg->resident), 24);
	CHECK_EQ(atomic_load(&sk->local), 0);
	CHECK_EQ(atomic_load(&sg->out_pages) + atomic_load(&sk->out_pages), 0);
	CHECK_EQ(physical_pages(g.pid, k), 24);

	CHECK_EQ(ask(&g, "g w 8"), 8);
	CHECK_EQ(settled(&sk->local, 8), 8);
	CHECK_EQ(atomic_load(&seg->resident), 32);
	CHECK_EQ(physical_pages(g.pid, k), 32);

	CHECK_EQ(ask(&g, "d 16 8"), 0);
	CHECK_EQ(atomic_load(&sg->local), 16);
	CHECK_EQ(settled(&sk->local, 16), 16);
	CHECK_EQ(atomic_load(&seg->resident), 32);
	CHECK_EQ(physical_pages(g.pid, k), 32);
	CHECK_EQ(atomic_load(&sg->out_pages) + atomic_load(&sk->out_pages), 0);

	CHECK_EQ(ask(&g, "g t 40"), 64);
	CHECK_EQ(resident_at_rest(g.pid, k), atomic_load(&seg->resident));
	CHECK(atomic_load(&seg->resident) <= BUDGET_PAGES);
	CHECK(atomic_load(&sg->out_pages) + atomic_load(&sk->out_pages) > 0);
	CHECK_EQ(ask(&g, "g c"), 0);
	CHECK_EQ(ask(&g, "c"), 0);
	CHECK_EQ(resident_at_rest(g.pid, k), atomic_load(&seg->resident));
	CHECK_EQ(ask(&g, "g q"), 0);
	stop(&g);
}

/* The distinct pages of the shared region [sh, sh + SHARED_PAGES pages) that a or b maps
 * (pagemap bit 63, present): the region's pages in the kernel's page tables, each once. A
 * resident page of the device is mapped by the process that faulted it until it is
 * evicted (no process here drops one), so at rest this is the region's resident count. */
static uint64_t shared_mapped(pid_t a, pid_t b, uintptr_t sh)
{
	uint8_t any[SHARED_PAGES] = {0};
	pid_t who[2] = {a, b};
	uint64_t n = 0;

	for (int i = 0; i < 2; i++) {
		uint64_t pm[SHARED_PAGES];
		char path[64];
		int fd;

		if (!who[i])
			continue;
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)who[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, pm, sizeof(pm), (off_t)(sh / PG * 8)) != sizeof(pm)) {
			if (fd >= 0)
				close(fd);
			return UINT64_MAX;
		}
		close(fd);
		for (int p = 0; p < SHARED_PAGES; p++)
			any[p] |= (uint8_t)(pm[p] >> 63);
	}
	for (int p = 0; p < SHARED_PAGES; p++)
		n += any[p];
	return n;
}

/* At rest, the kernel's view against the node's: the registered Pss of a and b (private
 * and shared mappings: a shmem page mapped by both counts half in each) equals the node's
 * count, and the shared pages mapped in either equal the node's shared count. */
static void check_kernel(pid_t a, pid_t b, uintptr_t sh, uint64_t resident, uint64_t shared)
{
	CHECK_EQ(settled(&seg->resident, resident), resident);
	CHECK_EQ(settled(&seg->shared_resident, shared), shared);
	CHECK_EQ(resident_at_rest(a, b), resident);
	CHECK_EQ(shared_mapped(a, b, sh), shared);
}

/* The n-th exit-summary field after `label` (e.g. "first touches") in the line of pid's
 * process starting with prefix, in the workers' stderr; UINT64_MAX if absent. */
static uint64_t summary_field(const char *text, const char *prefix, const char *label, int k)
{
	const char *l = text;
	unsigned long long v;

	for (int i = 0; i <= k; i++) {
		l = strstr(i ? l + 1 : l, prefix);
		if (!l)
			return UINT64_MAX;
	}
	l = strstr(l, label);
	if (!l)
		return UINT64_MAX;
	while (l > text && l[-1] == ' ')
		l--;
	while (l > text && l[-1] >= '0' && l[-1] <= '9')
		l--;
	return sscanf(l, "%llu", &v) == 1 ? v : UINT64_MAX;
}

/*
 * A shared anonymous region counts in its node's one budget, once (doc/swapdev.md, "Shared
 * anonymous memory"; the kernel's memcg charges a shmem page once, to the memcg of the
 * process that first faults it, and reclaims shmem and anon pages from one set of LRU
 * lists). A 64-page node, batch 32, a 256-page region (its own budget off a node would be
 * 1/16 of it, 16 pages). Hand-derived, step by step (stamps: the node's clock, FIFO):
 *  1. A maps the region and writes shared pages 0-47: the node's count is 48, all shared;
 *  2. A forks K; K reads 0-47 (minor faults: mapped there, nothing new) and writes 48-55:
 *     56, K's 8 pages charged once (A and K both map 0-47);
 *  3. A fills 40 private pages: at the 9th the node is full and the region's oldest (page
 *     0) is older than A's private pages: A evicts the region's batch 0-31 (K maps them:
 *     evicting until K zaps them; A waits for that), then fills to 64: 24 shared (32-55),
 *     40 private, no private page sent remote;
 *  4. A fills 24 more: the region's 24 (32-55) go first; 64 private, none shared;
 *  5. A fills 16 more: now its own oldest private batch goes (pages 0-31): 48;
 *  6. K reads shared 0-55 (fetches): at 64, A's private pages are older than the region's
 *     (fetched now): K's requests make A give up 32-63 and then 64-79; 56, all shared;
 *  7. A reads its 80 private pages (fetches): the region's oldest go first (0-31, then
 *     32-55), then A's own batch 0-31: 48, all private; A then reads shared 0-47 and K
 *     reads 48-55: 56, all shared;
 *  8. C, which does not map the region, fills 16 private pages: it chooses among the
 *     slots (its own 8 go at 64), the region's older 56 stay: 64.
 * At every step the count equals the kernel's (check_kernel), every word reads back
 * exactly, the node's count never passes the budget (one fault at a time here), and when
 * both have exited it is 0 (the region leaves with its last process).
 */
static void shared_region(const char *lib)
{
	struct proc a = start(lib, 9), c;
	struct sd_node_slot *sa, *sk, *sc;
	static char err[65536];
	uintptr_t sh;
	pid_t k;
	FILE *f;
	size_t n;

	sh = (uintptr_t)ask(&a, "S");
	sa = slot_of_soon(a.pid);
	CHECK(sa != NULL);
	if (!sa)
		return;
	atomic_store(&max_resident, 0);
	CHECK_EQ(ask(&a, "s 0 48 11"), 48); /* 1. */
	check_kernel(a.pid, 0, sh, 48, 48);
	CHECK_EQ(atomic_load(&sa->local), 0);

	k = (pid_t)ask(&a, "F"); /* 2. */
	sk = slot_of_soon(k);
	CHECK(sk != NULL);
	if (!sk)
		return;
	CHECK_EQ(ask(&a, "g r 0 48 11"), 0);
	check_kernel(a.pid, k, sh, 48, 48);
	CHECK_EQ(ask(&a, "g s 48 8 12"), 8);
	check_kernel(a.pid, k, sh, 56, 56);

	CHECK_EQ(ask(&a, "t 40"), 40); /* 3. */
	check_kernel(a.pid, k, sh, 64, 24);
	CHECK_EQ(atomic_load(&sa->local), 40);
	CHECK_EQ(atomic_load(&sa->out_pages), 0);

	CHECK_EQ(ask(&a, "t 24"), 64); /* 4. */
	check_kernel(a.pid, k, sh, 64, 0);
	CHECK_EQ(atomic_load(&sa->out_pages), 0);

	CHECK_EQ(ask(&a, "t 16"), 80); /* 5. */
	check_kernel(a.pid, k, sh, 48, 0);
	CHECK_EQ(atomic_load(&sa->out_pages), BATCH);

	CHECK_EQ(ask(&a, "g r 0 48 11"), 0); /* 6. */
	CHECK_EQ(ask(&a, "g r 48 8 12"), 0);
	check_kernel(a.pid, k, sh, 56, 56);
	CHECK_EQ(atomic_load(&sa->out_pages), 80);
	CHECK_EQ(settled(&sa->out_for_others, 48), 48); /* counted after the pages left */
	CHECK_EQ(atomic_load(&sk->out_pages), 0);

	CHECK_EQ(ask(&a, "c"), 0); /* 7. */
	check_kernel(a.pid, k, sh, 48, 0);
	CHECK_EQ(atomic_load(&sa->out_pages), 80 + BATCH);
	CHECK_EQ(ask(&a, "r 0 48 11"), 0);
	CHECK_EQ(ask(&a, "g r 48 8 12"), 0);
	check_kernel(a.pid, k, sh, 56, 56);

	/* 8. A process that does not map the region (C) fills 16 private pages: the region's
	 * pages are the node's oldest, but C does not see them: it evicts its own 8 (the
	 * slots' rule), the region keeps its 56. */
	c = start(lib, 10);
	CHECK_EQ(ask(&c, "t 16"), 16);
	sc = slot_of(c.pid);
	CHECK(sc != NULL);
	if (sc) {
		CHECK_EQ(atomic_load(&sc->out_pages), 8);
		CHECK_EQ(settled(&sc->local, 8), 8);
	}
	CHECK_EQ(settled(&seg->resident, 64), 64);
	CHECK_EQ(atomic_load(&seg->shared_resident), 56);
	CHECK_EQ(shared_mapped(a.pid, k, sh), 56);
	CHECK_EQ(registered_pss_kb(c.pid) / (PG / 1024), 8);
	CHECK_EQ(ask(&c, "c"), 0);
	stop(&c);
	check_kernel(a.pid, k, sh, 56, 56);

	CHECK_EQ(atomic_load(&seg->fallbacks), 0);
	CHECK(atomic_load(&seg->peak) <= BUDGET_PAGES);
	CHECK(atomic_load(&max_resident) <= BUDGET_PAGES);
	CHECK_EQ(ask(&a, "g q"), 0);
	stop(&a);
	CHECK_EQ(settled(&seg->resident, 0), 0);
	CHECK_EQ(atomic_load(&seg->shared_resident), 0);
	CHECK_EQ(atomic_load(&seg->shared_evicting), 0);

	/* The exit summaries (K's first: it exits first): first touches A 48, K 8; fetches
	 * A 48, K 56 + 8; the region's evictions A 32 + 24 + 32 + 24, K none. */
	f = fopen(err_path, "r");
	n = f ? fread(err, 1, sizeof(err) - 1, f) : 0;
	err[n] = 0;
	if (f)
		fclose(f);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " first touches", 0), 8);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " first touches", 1), 48);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " fetches", 0), 64);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " fetches", 1), 48);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " evicted;", 0), 0);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " evicted;", 1), 112);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " pages, budget", 0), SHARED_PAGES);
	CHECK_EQ(summary_field(err, "swapdev uffd shmem: ", " forced", 1), 0);
	CHECK(strstr(err, "swapdev uffd node: ") != NULL);
	if (failures)
		fputs(err, stderr);
}

static void forked_child(const char *lib)
{
	struct proc e = start(lib, 5);

	CHECK_EQ(ask(&e, "t 64"), 64);
	CHECK_EQ(ask(&e, "f"), 0); /* the child read E's pattern and its own exactly */
	CHECK_EQ(ask(&e, "c"), 0);
	stop(&e);
}

int main(int argc, char **argv)
{
	pthread_t th;
	int fd;
	long ufd;

	if (argc >= 4 && !strcmp(argv[2], "worker"))
		return worker(strtoull(argv[3], NULL, 10));
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBSWAPDEV_UFFD.so\n", argv[0]);
		return 2;
	}
	ufd = syscall(SYS_userfaultfd, 0);
	if (ufd < 0) {
		fprintf(stderr, "userfaultfd: %s: skipped\n", strerror(errno));
		return 77;
	}
	close((int)ufd);
	snprintf(shm_name, sizeof(shm_name), "/swapdev-test-node-%d", (int)getpid());
	fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*seg))) {
		perror(shm_name);
		return 2;
	}
	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (seg == MAP_FAILED) {
		shm_unlink(shm_name);
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(60);
	pthread_create(&th, NULL, sampler, NULL);
	if (argc >= 3 && !strcmp(argv[2], "shared")) {
		shared_case = 1;
		snprintf(err_path, sizeof(err_path), "/tmp/swapdev-test-node-%d.err", (int)getpid());
		unlink(err_path);
		shared_region(argv[1]);
		atomic_store(&sampling, 0);
		pthread_join(th, NULL);
		shm_unlink(shm_name);
		unlink(err_path);
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		return failures != 0;
	}
	two_processes(argv[1]);
	dead_victim(argv[1]);
	/* Every fault made room first: the count is over the budget by the faults of other
	 * processes in flight at most, below a batch. */
	CHECK(atomic_load(&max_resident) <= BUDGET_PAGES + BATCH);
	stopped_victim(argv[1]);
	forked_child(argv[1]);
	cow_charge(argv[1]);
	atomic_store(&sampling, 0);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&seg->budget_pages), BUDGET_PAGES);
	/* (The stopped victim's 64 pages could not leave: D's faults went over the budget by
	 * one page, D evicting its own each time.) A fork adds no page to the count (before
	 * 2026-11-28 it added the child's copy of E's 64 pages: the samples showed 128). */
	CHECK(atomic_load(&seg->peak) <= BUDGET_PAGES + BATCH);
	CHECK(atomic_load(&max_resident) <= BUDGET_PAGES + BATCH);
	CHECK_EQ(settled(&seg->resident, 0), 0);
	shm_unlink(shm_name);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
