/*
 * swapdev userfaultfd backend: an LD_PRELOAD library giving an unmodified application a
 * local-memory budget with remote memory behind it, at microsecond accuracy.
 *
 * Every private anonymous writable mmap() of at least SWAPDEV_MIN_MAP_BYTES (default 1 MiB)
 * is registered with userfaultfd (MISSING | WP). A handler thread resolves each fault:
 *   - first touch: a zero page (UFFDIO_COPY), no delay (not a remote access);
 *   - a page evicted earlier: busy-wait the model's delay for a 4 KiB swap-in, then
 *     UFFDIO_COPY from the "remote" store, logged as '-' in the rmem trace.
 * When SWAPDEV_LOCAL_BYTES of these pages are resident, SWAPDEV_EVICT_BATCH pages (default
 * 32, the kernel's SWAP_CLUSTER_MAX) leave in FIFO order of their fault-in: each contiguous
 * run is write-protected (so a concurrent writer waits instead of losing its write), copied
 * to the remote store, dropped with MADV_DONTNEED, and delayed as one swap-out request ('+').
 * Userfaultfd reports only faults, not later accesses, so without page-table access bits
 * the replacement order is FIFO (CLOCK with every reference bit clear).
 *
 * The handler spins on a non-blocking uffd (a blocking read() can hang: notes
 * swap-and-rdma.md §1) for SWAPDEV_SPIN_US (default 500) after the last fault, then poll()s.
 * fork(): every remote page is brought back first (the child's copies are not registered);
 * the child then runs without the device. Not seen: mappings made before the library
 * loads, and glibc malloc's own mmaps (not called through the PLT).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sd_user.h"

#define PAGE 4096ul
#define MAX_REGIONS 256
#define ST_RESIDENT 1
#define ST_REMOTE 2

struct region {
	uintptr_t start;
	size_t npages;
	uint64_t page_base; /* first page number in the trace's remote page space */
	uint32_t gen;
	uint8_t *state;
	char *remote;
};

struct fifo_ent {
	uint32_t slot;
	uint32_t gen;
	uint64_t page;
};

static struct region regions[MAX_REGIONS];
static uint32_t next_gen = 1;
static uint64_t next_page_base;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int uffd = -1;
static int enabled;
static uint64_t budget_pages, resident_pages, min_map_bytes, evict_batch, spin_ns;
static struct fifo_ent *fifo;
static uint64_t fifo_cap, fifo_head, fifo_len;
static char *zero_page;
static struct sd_run run;
static pthread_t handler;

static void *sys_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	return (void *)syscall(SYS_mmap, a, l, p, f, fd, o);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("swapdev uffd: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	_exit(2);
}

/* Drop entries of pages that were unmapped or discarded since they were pushed. */
static void fifo_compact(void)
{
	uint64_t i, kept = 0;

	for (i = 0; i < fifo_len; i++) {
		struct fifo_ent e = fifo[(fifo_head + i) % fifo_cap];

		if (regions[e.slot].gen == e.gen && (regions[e.slot].state[e.page] & ST_RESIDENT))
			fifo[(fifo_head + kept++) % fifo_cap] = e;
	}
	fifo_len = kept;
}

/* Double the ring (after fork() brought every page home, all of them are resident). */
static void fifo_grow(void)
{
	uint64_t cap = 2 * fifo_cap, i;
	struct fifo_ent *ring = sys_mmap(NULL, cap * sizeof(*ring), PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (ring == MAP_FAILED)
		die("cannot grow the FIFO: %s", strerror(errno));
	for (i = 0; i < fifo_len; i++)
		ring[i] = fifo[(fifo_head + i) % fifo_cap];
	syscall(SYS_munmap, fifo, fifo_cap * sizeof(*fifo));
	fifo = ring;
	fifo_cap = cap;
	fifo_head = 0;
}

static void fifo_push(uint32_t slot, uint64_t page)
{
	if (fifo_len == fifo_cap)
		fifo_compact();
	if (fifo_len == fifo_cap)
		fifo_grow();
	fifo[(fifo_head + fifo_len) % fifo_cap] =
		(struct fifo_ent){slot, regions[slot].gen, page};
	fifo_len++;
}

static void wp(uintptr_t addr, size_t len, int on)
{
	struct uffdio_writeprotect w = {
		.range = {.start = addr, .len = len},
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	while (ioctl(uffd, UFFDIO_WRITEPROTECT, &w) && errno == EAGAIN)
		;
}

/* Resolve a missing fault at addr with a copy of src; 0, or -1 if the page exists. */
static int copy_in(uintptr_t addr, const void *src)
{
	struct uffdio_copy c = {.dst = addr, .src = (uintptr_t)src, .len = PAGE, .mode = 0};

	for (;;) {
		if (ioctl(uffd, UFFDIO_COPY, &c) == 0)
			return 0;
		if (errno == EEXIST) {
			struct uffdio_range r = {.start = addr, .len = PAGE};

			ioctl(uffd, UFFDIO_WAKE, &r);
			return -1;
		}
		if (errno != EAGAIN)
			die("UFFDIO_COPY at %#lx: %s", (unsigned long)addr, strerror(errno));
		c.copy = 0;
	}
}

/* Swap out one contiguous run of resident pages of region slot. */
static void evict_run(uint32_t slot, uint64_t first, uint64_t n)
{
	struct region *r = &regions[slot];
	uintptr_t addr = r->start + first * PAGE;
	uint64_t t0 = sd_now_ns(), i;

	wp(addr, n * PAGE, 1);
	memcpy(r->remote + first * PAGE, (void *)addr, n * PAGE);
	if (syscall(SYS_madvise, addr, n * PAGE, MADV_DONTNEED))
		die("MADV_DONTNEED: %s", strerror(errno));
	for (i = 0; i < n; i++)
		r->state[first + i] = ST_REMOTE;
	resident_pages -= n;
	sd_run_delay(&run, t0, sd_delay_ns(&run.model, n * PAGE));
	sd_run_log(&run, 0, r->page_base + first, n);
}

static void evict_some(void)
{
	uint64_t taken = 0;
	uint32_t run_slot = 0;
	uint64_t run_first = 0, run_n = 0;

	while (taken < evict_batch && fifo_len) {
		struct fifo_ent e = fifo[fifo_head];

		fifo_head = (fifo_head + 1) % fifo_cap;
		fifo_len--;
		if (regions[e.slot].gen != e.gen || !(regions[e.slot].state[e.page] & ST_RESIDENT))
			continue; /* unmapped or discarded since */
		if (run_n && e.slot == run_slot && e.page == run_first + run_n) {
			run_n++;
		} else {
			if (run_n)
				evict_run(run_slot, run_first, run_n);
			run_slot = e.slot;
			run_first = e.page;
			run_n = 1;
		}
		taken++;
	}
	if (run_n)
		evict_run(run_slot, run_first, run_n);
	sd_run_end_batch(&run);
}

static int find_region(uintptr_t addr)
{
	int i;

	for (i = 0; i < MAX_REGIONS; i++)
		if (regions[i].gen && addr >= regions[i].start &&
		    addr < regions[i].start + regions[i].npages * PAGE)
			return i;
	return -1;
}

static void handle_fault(const struct uffd_msg *m)
{
	uintptr_t addr = m->arg.pagefault.address & ~(PAGE - 1);
	int slot;
	struct region *r;
	uint64_t page;

	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		/* A write during an eviction: the page is remote (or back) by now; let it retry. */
		wp(addr, PAGE, 0);
		return;
	}
	pthread_mutex_lock(&lock);
	slot = find_region(addr);
	if (slot < 0) {
		struct uffdio_range rg = {.start = addr, .len = PAGE};

		ioctl(uffd, UFFDIO_WAKE, &rg); /* unregistered meanwhile: retry as a normal fault */
		pthread_mutex_unlock(&lock);
		return;
	}
	r = &regions[slot];
	page = (addr - r->start) / PAGE;
	if (r->state[page] & ST_RESIDENT) {
		/* A duplicate message (EEXIST), or the application dropped the page itself
		 * (MADV_DONTNEED outside our view): then it reads as zeros, as Linux does. */
		copy_in(addr, zero_page);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (resident_pages >= budget_pages)
		evict_some();
	if (r->state[page] & ST_REMOTE) {
		uint64_t t0 = sd_now_ns();

		sd_run_delay(&run, t0, sd_delay_ns(&run.model, PAGE));
		copy_in(addr, r->remote + page * PAGE);
		sd_run_log(&run, 1, r->page_base + page, 1);
		sd_run_end_batch(&run);
	} else {
		copy_in(addr, zero_page);
	}
	r->state[page] = ST_RESIDENT;
	resident_pages++;
	fifo_push((uint32_t)slot, page);
	pthread_mutex_unlock(&lock);
}

static void *handler_main(void *arg)
{
	uint64_t last = sd_now_ns();

	(void)arg;
	for (;;) {
		struct uffd_msg msg;
		ssize_t n = read(uffd, &msg, sizeof(msg));

		if (n == (ssize_t)sizeof(msg)) {
			if (msg.event == UFFD_EVENT_PAGEFAULT)
				handle_fault(&msg);
			last = sd_now_ns();
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			die("read(uffd): %s", strerror(errno));
		if (sd_now_ns() - last > spin_ns) {
			struct pollfd p = {.fd = uffd, .events = POLLIN};

			poll(&p, 1, 100);
		}
	}
	return NULL;
}

static void register_region(uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	size_t npages = len / PAGE;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_REGIONS && regions[i].gen; i++)
		;
	if (i == MAX_REGIONS) {
		pthread_mutex_unlock(&lock);
		return; /* stays ordinary local memory */
	}
	regions[i].state = sys_mmap(NULL, npages, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	regions[i].remote = sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (regions[i].state == MAP_FAILED || regions[i].remote == MAP_FAILED)
		die("cannot map %zu bytes of remote store: %s", len, strerror(errno));
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER %#lx+%zu: %s", (unsigned long)start, len, strerror(errno));
	regions[i].start = start;
	regions[i].npages = npages;
	regions[i].page_base = next_page_base;
	regions[i].gen = next_gen++;
	next_page_base += npages;
	pthread_mutex_unlock(&lock);
}

/* Forget [addr, addr+len) in every region; materialize: bring remote pages back first. */
static void release_range(uintptr_t addr, size_t len, int materialize, int drop_region)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_REGIONS; i++) {
		struct region *r = &regions[i];
		uintptr_t end = r->start + r->npages * PAGE;
		uintptr_t lo, hi;
		uint64_t p;

		if (!r->gen || addr >= end || addr + len <= r->start)
			continue;
		lo = addr > r->start ? addr : r->start;
		hi = addr + len < end ? addr + len : end;
		for (p = (lo - r->start) / PAGE; p < (hi - r->start + PAGE - 1) / PAGE; p++) {
			if (r->state[p] & ST_RESIDENT)
				resident_pages--;
			else if (materialize && (r->state[p] & ST_REMOTE))
				copy_in(r->start + p * PAGE, r->remote + p * PAGE);
			r->state[p] = 0;
		}
		if (drop_region || (lo == r->start && hi == end)) {
			struct uffdio_range rg = {.start = r->start, .len = r->npages * PAGE};

			if (materialize)
				ioctl(uffd, UFFDIO_UNREGISTER, &rg);
			syscall(SYS_munmap, r->state, r->npages);
			syscall(SYS_munmap, r->remote, r->npages * PAGE);
			memset(r, 0, sizeof(*r));
		}
	}
	pthread_mutex_unlock(&lock);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = sys_mmap(addr, len, prot, flags, fd, off);

	if (enabled && p != MAP_FAILED && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) &&
	    (prot & PROT_WRITE) && len >= min_map_bytes && !(flags & MAP_HUGETLB)) {
		if (flags & MAP_FIXED)
			release_range((uintptr_t)p, len, 0, 0);
		syscall(SYS_madvise, p, len, MADV_NOHUGEPAGE);
		register_region((uintptr_t)p, (len + PAGE - 1) & ~(PAGE - 1));
	}
	return p;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
	if (enabled)
		release_range((uintptr_t)addr, len, 0, 0);
	return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	void *new_addr;

	va_start(ap, flags);
	new_addr = va_arg(ap, void *);
	va_end(ap);
	/* The moved range leaves userfaultfd: bring its remote pages home first. */
	if (enabled)
		release_range((uintptr_t)old, old_len, 1, 1);
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

int madvise(void *addr, size_t len, int advice)
{
	if (enabled && (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE))
		release_range((uintptr_t)addr, len, 0, 0);
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/*
 * fork(): the child's copies of registered mappings lose userfaultfd, so a page that is
 * remote would read as zeros there. Before fork every remote page comes home (the budget
 * is restored in the parent right after); the child runs without the device.
 */
static void atfork_prepare(void)
{
	int i;
	uint64_t p;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_REGIONS; i++) {
		struct region *r = &regions[i];

		if (!r->gen)
			continue;
		for (p = 0; p < r->npages; p++)
			if (r->state[p] & ST_REMOTE) {
				copy_in(r->start + p * PAGE, r->remote + p * PAGE);
				r->state[p] = ST_RESIDENT;
				resident_pages++;
				fifo_push((uint32_t)i, p);
			}
	}
}

static void atfork_parent(void)
{
	while (resident_pages > budget_pages) /* back under the budget (logged swap-outs) */
		evict_some();
	pthread_mutex_unlock(&lock);
}

static void atfork_child(void)
{
	enabled = 0;
	run.trace = NULL; /* the parent's buffered trace is the parent's to write */
	run.hist_path = NULL;
	run.reads = run.writes = 0;
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void swapdev_init(void)
{
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP};
	uint64_t local_bytes, spin_us;

	if (sd_env_u64("SWAPDEV_LOCAL_BYTES", 0, &local_bytes) ||
	    sd_env_u64("SWAPDEV_MIN_MAP_BYTES", 1 << 20, &min_map_bytes) ||
	    sd_env_u64("SWAPDEV_EVICT_BATCH", 32, &evict_batch) ||
	    sd_env_u64("SWAPDEV_SPIN_US", 500, &spin_us))
		_exit(2);
	if (local_bytes < PAGE * 64 || evict_batch == 0)
		die("SWAPDEV_LOCAL_BYTES must be >= 256 KiB and SWAPDEV_EVICT_BATCH >= 1");
	if (sd_run_init(&run))
		_exit(2);
	budget_pages = local_bytes / PAGE;
	if (evict_batch > budget_pages)
		evict_batch = budget_pages;
	spin_ns = spin_us * 1000;
	fifo_cap = 2 * budget_pages + 64;
	fifo = sys_mmap(NULL, fifo_cap * sizeof(*fifo), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	zero_page = sys_mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fifo == MAP_FAILED || zero_page == MAP_FAILED)
		die("cannot map the FIFO: %s", strerror(errno));
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		die("userfaultfd: %s (root, or vm.unprivileged_userfaultfd=1)", strerror(errno));
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API: %s", strerror(errno));
	if (pthread_create(&handler, NULL, handler_main, NULL) ||
	    pthread_atfork(atfork_prepare, atfork_parent, atfork_child))
		die("cannot start the handler thread");
	enabled = 1;
}

__attribute__((destructor)) static void swapdev_fini(void)
{
	/* The handler keeps serving faults until the process is gone; only the outputs close. */
	pthread_mutex_lock(&lock);
	sd_run_finish(&run, "uffd");
	pthread_mutex_unlock(&lock);
}
