/*
 * swapdev userfaultfd backend: an LD_PRELOAD library giving an unmodified application a
 * local-memory budget with remote memory behind it, at microsecond accuracy.
 *
 * Every private anonymous writable mmap() of at least SWAPDEV_MIN_MAP_BYTES (default 1 MiB)
 * is registered with userfaultfd (MISSING | WP). Each such region has a store of the same
 * size (a private mapping of this process, not registered) that holds the copies of the
 * pages taken out of the application's page table, page p at offset p. Taking a run of
 * pages out: write-protect it (so a concurrent writer waits instead of losing its write),
 * copy it to the store, MADV_DONTNEED it. A page is in one of these states:
 *   - mapped (ST_RESIDENT): local, in the application's page table;
 *   - inactive (ST_INACTIVE, CLOCK only): local, taken out to the store so that its next
 *     access faults: the MMU's reference bit, made visible to user space;
 *   - remote (ST_REMOTE): in the store; an access pays the paging policy's requests.
 * The local budget SWAPDEV_LOCAL_BYTES counts mapped + inactive pages (both are held in
 * local memory): the process's own, or with SWAPDEV_NODE_SHM the budget of its node, shared
 * by every device process of the node (uffd_node.h; make_room below). A handler thread resolves each fault with UFFDIO_COPY:
 *   - first touch: a zero page, no delay (not a remote access);
 *   - inactive page: a minor refault; copied back at once with no delay and not logged (it
 *     is not a remote access), counted in the "minor" histogram (its service time);
 *   - remote page: the paging policy's requests (SWAPDEV_PAGING, policy.h: demand, one
 *     4 KiB read, busy-waited and logged '-'; comex, its read and write buffers), then
 *     copied back from the store.
 * When the budget is full, SWAPDEV_EVICT_BATCH local pages (default 32, the kernel's
 * SWAP_CLUSTER_MAX) go remote as one batch, chosen by the eviction policy
 * (SWAPDEV_EVICTION, policy_evict.c: fifo, the default, or clock); each contiguous run
 * goes to the paging policy's write-back (demand: one swap-out request, delayed, logged).
 * Every clock reference sample costs a user-space fault (~3 us here), which is why fifo is
 * the default: on a random-access application CLOCK multiplies the faults
 * (doc/swapdev.md, "Eviction").
 * This kernel has no page_idle (CONFIG_IDLE_PAGE_TRACKING off) and no DAMON_VADDR, and
 * neither pagemap nor kpageflags shows a PTE's accessed bit (doc/swapdev.md, "Eviction").
 *
 * The handler spins on a non-blocking uffd (a blocking read() can hang: notes
 * swap-and-rdma.md §1) for SWAPDEV_SPIN_US (default 500) after the last fault, then poll()s.
 * SWAPDEV_HANDLER_CPUS (a list such as "0" or "0,2", default unset: the process's own
 * affinity) pins the handler thread apart from the application (disaggsim emulate's
 * noise control: on a 2-core machine the spinning handler on one core, the application on
 * the other; swapdev/jct_stats.py).
 * fork(): the child runs on a device of its own, with the parent's page states and a copy
 * of its stores (atfork_child below); on a node its inherited pages count once, in the
 * parent, until each stops being shared copy-on-write (charge_exclusive); exec: the new image loads the library again
 * (LD_PRELOAD); vfork and posix_spawn: no device work in the child, whose faults before
 * its exec are the parent's (one address space). Not seen: mappings made before the
 * library loads, and glibc malloc's own mmaps (not called through the PLT).
 * The application's own calls on registered ranges, each made under the lock so that the
 * handler never takes pages out of a range being changed (test/test_uffd_mappings.c):
 *   - munmap(), mmap(MAP_FIXED) of any protection: the old pages are forgotten, a region
 *     wholly gone is dropped (HotSpot uncommits heap with mmap(MAP_FIXED, PROT_NONE));
 *   - madvise(MADV_DONTNEED | MADV_FREE | MADV_REMOVE): the pages are forgotten (they read
 *     as zeros), the region stays registered and tracked (jemalloc purges whole extents);
 *   - mprotect() without PROT_READ: the range's pages come home and leave the device's
 *     view (the eviction's copy would fault on them); an access raises SIGSEGV as without
 *     the device;
 *   - mremap(): every region the old range touches comes home whole and is unregistered
 *     (without UFFD_FEATURE_EVENT_REMAP the moved mapping is not registered).
 * A missing fault the device holds nothing of is served a zero page.
 * Shared anonymous mappings (MAP_SHARED | MAP_ANONYMOUS, shmem: PostgreSQL's shared
 * buffers, made by the postmaster and inherited by the backends it forks) are registered
 * only with SWAPDEV_SHARED_LOCAL_FRACTION set, in MINOR mode, by uffd_shmem.c: the page
 * cache is their store (no data moves), one budget per mapping is shared by every process
 * mapping it, and other processes' page-table entries are zapped from a shared eviction
 * log (doc/swapdev.md, "Shared anonymous memory"). This file calls its hooks (mmap,
 * munmap, mremap, the fault path, the handler's loop, fork, stop, exit).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy.h"
#include "sd_user.h"
#include "uffd_node.h"
#include "uffd_shmem.h"
#include "uffd_space.h"

struct region uffd_regions[MAX_REGIONS];
#define regions uffd_regions
static uint32_t next_gen = 1;
static uint64_t next_page_base;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int uffd = -1;
static int enabled;
/* A child forked from a process on the device (atfork_child), and its pid (a vfork child
 * of it shares its memory but not its pid). */
static int forked_child;
static pid_t child_pid;
/* The process whose device this is (set at start-up and in a forked child). A vfork child,
 * or any clone sharing the memory, has another pid: the device's state it sees is its
 * parent's, so it must leave that state alone (close_device_fd_ok). */
static pid_t device_pid;
static uint64_t budget_pages, local_pages, min_map_bytes, spin_ns;
static const struct sd_evict_ops *evict_ops;
static void *evict_st;
static const struct sd_paging_ops *paging_ops;
static void *paging_st;
static char *zero_page;
static struct sd_run run;
static pthread_t handler;
/* fork() in progress (atfork_prepare to atfork_parent): the forking thread's id, else 0. */
static _Atomic pid_t fork_tid;
static pthread_cond_t fork_done = PTHREAD_COND_INITIALIZER;
/* Faults of other threads read while a fork is in progress, served after it (under the
 * lock; grown by doubling). */
static struct uffd_msg deferred_static[64], *deferred = deferred_static;
static size_t ndeferred, deferred_cap = 64;
/* The application closes the device's descriptor (stop_device): the handler returns. */
static atomic_int handler_stop;
/*
 * One budget per node (SWAPDEV_NODE_SHM, uffd_node.h; doc/swapdev.md, "One budget per
 * node"): the node's segment, this process's slot in it (NULL: the process's own budget,
 * as without the segment), its reclaim thread, and what the exit summary reports.
 */
static struct sd_node *node;
static struct sd_node_slot *my_slot;
static pthread_t reclaimer;
static atomic_int reclaim_stop;
static uint64_t local_clock;
static uint64_t node_fallbacks, node_requests, node_served_pages, node_inherited_pages;
/*
 * A forked child on a node: its local pages inherited at the fork and still shared
 * copy-on-write with the process they came from are not charged to the node (the kernel
 * charges such a page once, to the memcg that faulted it: mm/memcontrol.c); it charges each
 * once pagemap shows it exclusive (charge_exclusive). uncharged_pages counts them (the
 * regions' uncharged flags; written under the lock, read without it as a hint);
 * node_charged_pages, those charged since the fork; late_charged, charges not yet made
 * room for (the slot's unsettled pages).
 */
static uint64_t uncharged_pages, node_charged_pages, late_charged;
/* How often the reclaim thread of a process holding uncharged pages reads pagemap: the
 * bound on how long a copy-on-write break goes uncounted. */
#define RECONCILE_NS 10000000ull
#define RECLAIM_IDLE_NS 100000000ull
/* How long a fault waits for another process to give up pages before it evicts its own
 * (a fallback, counted): each futex wait is NODE_WAIT_SLICE_NS at most. */
#define NODE_WAIT_NS 500000000ull
#define NODE_WAIT_SLICE_NS 1000000ull
/* After a fault waited NODE_WAIT_NS in vain for other processes to zap shared pages being
 * evicted (a process of the region stopped, or killed without leaving it), this process's
 * faults do not wait for zaps again for this long (a region's evictions complete without
 * their zaps after 1 s: uffd_shmem.c's ACK_TIMEOUT_NS). */
#define ACK_STALL_NS 1000000000ull
static uint64_t acks_stalled_until;

static void *sys_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	return (void *)syscall(SYS_mmap, a, l, p, f, fd, o);
}

#define die uffd_die
void uffd_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("swapdev uffd: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	_exit(2);
}

void *uffd_map(size_t bytes, const char *what)
{
	void *p = sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		uffd_die("cannot map %zu bytes for %s: %s", bytes, what, strerror(errno));
	return p;
}

/* The remote memory of the paging policies (struct sd_io): the run's model and trace. */
static uint64_t io_request(void *ctx, const struct sd_req *req, int wait)
{
	uint64_t ns;

	(void)ctx;
	if (wait) {
		ns = sd_run_serve(&run, req);
	} else {
		ns = sd_run_model_delay(&run, req);
		pthread_mutex_lock(&run.mu); /* asynchronous: the model's, never waited for */
		sd_hist_add(&run.target, ns);
		pthread_mutex_unlock(&run.mu);
	}
	sd_run_log(&run, req->op == SD_OP_READ, req->first_page, req->npages);
	return ns;
}

static void io_end_batch(void *ctx)
{
	(void)ctx;
	sd_run_end_batch(&run);
}

static void io_wait_until(void *ctx, uint64_t t_ns)
{
	(void)ctx;
	while (sd_now_ns() < t_ns)
		;
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
			uffd_die("UFFDIO_COPY at %#lx: %s", (unsigned long)addr, strerror(errno));
		c.copy = 0;
	}
}

/*
 * Take n application pages from first out of the page table into the store: the run is
 * write-protected (so a concurrent writer waits instead of losing its write), copied and
 * dropped with MADV_DONTNEED; the next access faults.
 */
void uffd_page_out(struct region *r, uint64_t first, uint64_t n)
{
	uintptr_t addr = r->start + first * PAGE;

	wp(addr, n * PAGE, 1);
	memcpy(r->store + first * PAGE, (void *)addr, n * PAGE);
	if (syscall(SYS_madvise, addr, n * PAGE, MADV_DONTNEED))
		uffd_die("MADV_DONTNEED: %s", strerror(errno));
}

/* Under the lock: local_pages += delta, and the node's count by the charged pages among
 * them (charged: delta less the pages leaving uncharged, leave_charged). */
static void local_add(int64_t delta, int64_t charged)
{
	local_pages += (uint64_t)delta;
	if (my_slot && charged)
		sd_node_add_local(node, my_slot, charged);
}

/* Under the lock: page p of r leaves this process's local pages (sent remote, forgotten).
 * 1 if it was charged to the node; 0 for a page inherited at a fork and still shared
 * copy-on-write (its physical page stays, charged to the process it came from). */
static int leave_charged(struct region *r, uint64_t p)
{
	if (!r->uncharged || !r->uncharged[p])
		return 1;
	r->uncharged[p] = 0;
	uncharged_pages--;
	return 0;
}

/* Under the lock: the stamp of a page becoming local now (the node's clock, shared by its
 * processes: the order the node's pages became local in). */
static uint64_t next_stamp(void)
{
	return node ? atomic_fetch_add(&node->clock, 1) : ++local_clock;
}

/* Under the lock, after the local pages changed: publish this process's next page to leave. */
static void node_publish(void)
{
	if (my_slot)
		atomic_store(&my_slot->oldest, evict_ops->oldest(evict_st));
}

/* Send one contiguous run of local pages of region slot remote (the paging policy's
 * write-back: demand, one swap-out request). */
void uffd_remote_run(uint32_t slot, uint64_t first, uint64_t n, int mapped)
{
	struct region *r = &regions[slot];
	uint64_t i, charged = 0;

	if (mapped)
		uffd_page_out(r, first, n);
	for (i = 0; i < n; i++) {
		charged += (uint64_t)leave_charged(r, first + i);
		r->state[first + i] = ST_REMOTE;
	}
	if (my_slot) /* before the count drops: a process waiting for room sees it */
		atomic_fetch_add(&my_slot->out_pages, n);
	local_add(-(int64_t)n, -(int64_t)charged);
	paging_ops->write(paging_st, r->page_base + first, n, sd_now_ns());
}

void uffd_end_evict(void)
{
	paging_ops->end_evict(paging_st, sd_now_ns());
}

/* Shared regions (uffd_shmem.c), under the lock: the paging policy on device page g. */
void uffd_shared_fetch(uint64_t g)
{
	paging_ops->fetch(paging_st, g, sd_now_ns());
}

void uffd_shared_write(uint64_t g, uint64_t n)
{
	paging_ops->write(paging_st, g, n, sd_now_ns());
}

static void make_room(void);

/* A shared region's fault on a node (uffd_shmem.c), under the lock: as a private page, room
 * in the node's budget first, but never while a fork is in progress (nothing may leave the
 * page table until the child has its copy: atfork_parent makes room after it). */
void uffd_shared_make_room(void)
{
	if (my_slot && !atomic_load(&fork_tid))
		make_room();
}

void uffd_shared_note_peak(void)
{
	if (my_slot && !atomic_load(&fork_tid))
		sd_node_note_peak(node);
}

static int uffd_thread_start_arg(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

int uffd_thread_start(pthread_t *t, void *(*fn)(void *))
{
	return uffd_thread_start_arg(t, fn, NULL);
}

/* The region holding addr: the latest registered if several do (a MAP_FIXED mapping over
 * part of an older region is a region of its own, registered after it). */
static int find_region(uintptr_t addr)
{
	int i, best = -1;

	for (i = 0; i < MAX_REGIONS; i++)
		if (regions[i].gen && addr >= regions[i].start &&
		    addr < regions[i].start + regions[i].npages * PAGE &&
		    (best < 0 || regions[i].gen > regions[best].gen))
			best = i;
	return best;
}

/*
 * A missing fault on a page the device holds nothing of (a registered range it no longer
 * tracks): an untouched anonymous page reads as zeros, as Linux gives it. Waking the thread
 * instead (as before) made it fault again at once, forever, while the range stayed
 * registered: a jemalloc process froze after madvise(MADV_DONTNEED) of a whole region.
 * If the range is not registered any more (unmapped meanwhile), wake the thread: it
 * retries as a normal fault.
 */
static void zero_fill_untracked(uintptr_t addr)
{
	struct uffdio_zeropage z = {.range = {.start = addr, .len = PAGE}, .mode = 0};

	while (ioctl(uffd, UFFDIO_ZEROPAGE, &z)) {
		struct uffdio_range rg = {.start = addr, .len = PAGE};

		if (errno == EAGAIN) {
			z.zeropage = 0;
			continue;
		}
		ioctl(uffd, UFFDIO_WAKE, &rg); /* EEXIST, ENOENT: present or gone: retry */
		return;
	}
}

/*
 * Under the lock, before a fault makes a page local: room for it. Without a node segment,
 * one eviction batch of this process's if its budget is full (as ever). With one, while
 * the node is at its budget: the process holding the node's oldest local page gives up a
 * batch, this one by a local eviction, another by its reclaim thread on a request posted
 * to its slot while this handler waits on the node's futex (bounded slices); a process
 * found gone has its slot reclaimed. If nobody else frees pages within NODE_WAIT_NS the
 * fault evicts locally (counted: node_fallbacks) or, holding nothing, goes over budget;
 * the process that did not answer (stopped: SIGSTOP, a debugger) is left out of the choice
 * while its request stays pending, so that one fault waits for it, not every fault.
 * Shared regions on the node (uffd_shmem.c) count in the node's pages once each: when the
 * oldest page of a region this process maps is older than every slot's, this process
 * evicts a batch of the region itself; when the count is over the budget only by shared
 * pages being evicted (waiting for other processes' zaps), it waits for those zaps instead.
 */
static void find_room(void)
{
	uint64_t deadline = 0;

	if (!my_slot) {
		if (local_pages >= budget_pages) {
			evict_ops->evict(evict_st);
			node_publish();
		}
		return;
	}
	while (atomic_load(&node->resident) >= budget_pages) {
		struct sd_node_slot *victim;
		uint64_t shared_oldest;
		uint32_t seen;
		int shared;

		if (deadline && sd_now_ns() >= deadline) { /* before the choice, which leaves
							     * the process that kept us waiting out */
			node_fallbacks++;
			atomic_fetch_add(&node->fallbacks, 1);
			if (sd_node_held(node) < budget_pages) { /* the zaps did not come */
				acks_stalled_until = sd_now_ns() + ACK_STALL_NS;
				return;
			}
			if (local_pages) {
				evict_ops->evict(evict_st);
				node_publish();
			}
			return;
		}
		if (sd_node_held(node) < budget_pages) {
			/* The pages over the budget are shared pages being evicted, waiting for the
			 * other processes of their region to zap them: wait for those, acknowledging
			 * the others' evictions meanwhile (every process waiting here does, so no two
			 * wait for each other), rather than evict more than the budget needs. After
			 * a wait in vain, over the budget by those pages for a while instead. */
			if (sd_now_ns() < acks_stalled_until)
				return;
			if (!deadline)
				deadline = sd_now_ns() + NODE_WAIT_NS;
			seen = atomic_load(&node->under);
			uffd_shmem_settle();
			if (atomic_load(&node->resident) >= budget_pages &&
			    sd_node_held(node) < budget_pages)
				sd_node_wait_under(node, seen, NODE_WAIT_SLICE_NS);
			continue;
		}
		victim = sd_node_oldest(node, sd_now_ns(), NODE_WAIT_NS);
		/* A shared region this process maps whose oldest page is older than every slot's
		 * gives up a batch, by this process (a region it does not map is not seen here:
		 * the slots' rule as before). */
		shared_oldest = uffd_shmem_oldest(&shared);
		if (shared >= 0 && (!victim || shared_oldest < atomic_load(&victim->oldest)) &&
		    uffd_shmem_evict(shared))
			continue;

		if (!victim || victim == my_slot) {
			uint64_t before = local_pages;

			if (local_pages)
				evict_ops->evict(evict_st);
			node_publish();
			if (local_pages == before)
				return; /* nothing to give up here, nobody else holds pages */
			continue;
		}
		if (!sd_node_alive(victim)) {
			sd_node_reclaim(node, victim);
			continue;
		}
		if (!deadline)
			deadline = sd_now_ns() + NODE_WAIT_NS;
		seen = atomic_load(&node->under);
		node_requests += (uint64_t)sd_node_request(victim, sd_now_ns());
		uffd_shmem_settle(); /* the victim's handler may wait for this process's zaps */
		if (atomic_load(&node->resident) >= budget_pages)
			sd_node_wait_under(node, seen, NODE_WAIT_SLICE_NS);
	}
}

/* Under the lock: find_room, after which the pages this process charged late (copy-on-write,
 * charge_exclusive) are made room for: they leave the slot's unsettled pages. */
static void make_room(void)
{
	find_room();
	if (late_charged && my_slot) {
		atomic_fetch_sub(&my_slot->unsettled, late_charged);
		late_charged = 0;
	}
}

/*
 * Under the lock: resolve the missing fault at addr. forking: the forking thread's fault
 * while a fork() is in progress: no eviction (nothing may leave the page table until the
 * child has its copy), and every change to the device's state is made before the
 * UFFDIO_COPY that wakes the thread, so that the fork it goes on to make copies a state
 * that matches its page table.
 */
static void serve_locked(uintptr_t addr, int forking)
{
	int slot;
	struct region *r;
	uint64_t page;
	const char *src = zero_page;

	slot = find_region(addr);
	if (slot < 0) {
		zero_fill_untracked(addr);
		return;
	}
	r = &regions[slot];
	page = (addr - r->start) / PAGE;
	if (r->state[page] & ST_RESIDENT) {
		/* A duplicate message (EEXIST), or the application dropped the page itself
		 * (MADV_DONTNEED outside our view): then it reads as zeros, as Linux does. */
		copy_in(addr, zero_page);
		return;
	}
	if (r->state[page] & ST_INACTIVE) {
		/* Touched before the back hand came: local, no delay, not logged; active again. */
		uint64_t t0 = sd_now_ns();

		if (!forking)
			copy_in(addr, r->store + page * PAGE);
		r->state[page] = ST_RESIDENT;
		evict_ops->left_inactive(evict_st);
		evict_ops->mapped(evict_st, (uint32_t)slot, page, next_stamp());
		node_publish();
		sd_hist_add(&run.minor, sd_now_ns() - t0);
		if (forking)
			copy_in(addr, r->store + page * PAGE);
		return;
	}
	if (!forking)
		make_room();
	if (r->state[page] & ST_REMOTE) {
		paging_ops->fetch(paging_st, r->page_base + page, sd_now_ns());
		src = r->store + page * PAGE;
	}
	if (!forking)
		copy_in(addr, src);
	r->state[page] = ST_RESIDENT;
	local_add(1, 1);
	evict_ops->mapped(evict_st, (uint32_t)slot, page, next_stamp());
	node_publish();
	if (my_slot && !forking) /* the node's peak after a fault that made room (tests) */
		sd_node_note_peak(node);
	if (forking)
		copy_in(addr, src);
}

/* Under the lock: keep a fault of another thread read during a fork, to serve after it. */
static void defer_fault(const struct uffd_msg *m)
{
	if (ndeferred == deferred_cap) {
		struct uffd_msg *bigger = uffd_map(2 * deferred_cap * sizeof(*m), "deferred faults");

		memcpy(bigger, deferred, ndeferred * sizeof(*m));
		if (deferred != deferred_static)
			syscall(SYS_munmap, deferred, deferred_cap * sizeof(*m));
		deferred = bigger;
		deferred_cap *= 2;
	}
	deferred[ndeferred++] = *m;
}

static void handle_fault(const struct uffd_msg *m)
{
	uintptr_t addr = m->arg.pagefault.address & ~(PAGE - 1);
	pid_t forker;

	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		/* A write during an eviction: the page is remote (or back) by now; let it retry. */
		wp(addr, PAGE, 0);
		return;
	}
	pthread_mutex_lock(&lock);
	if (uffd_shmem_fault(uffd, m)) { /* a shared region's: served also during a fork */
		pthread_mutex_unlock(&lock);
		return;
	}
	forker = atomic_load(&fork_tid);
	if (forker && (pid_t)m->arg.pagefault.feat.ptid != forker)
		defer_fault(m); /* its thread does not exist in the child: after the fork */
	else
		serve_locked(addr, forker != 0);
	pthread_mutex_unlock(&lock);
}

/* Pin the calling (handler) thread to SWAPDEV_HANDLER_CPUS, a comma-separated CPU list. */
static void pin_handler(void)
{
	const char *list = getenv("SWAPDEV_HANDLER_CPUS");
	cpu_set_t set;
	char *end;
	int err;

	if (!list || !*list)
		return;
	CPU_ZERO(&set);
	for (const char *p = list; *p; p = end + (*end == ',')) {
		long cpu = strtol(p, &end, 10);

		if (end == p || cpu < 0 || cpu >= CPU_SETSIZE || (*end && *end != ','))
			uffd_die("SWAPDEV_HANDLER_CPUS=%s: expected CPU numbers separated by commas", list);
		CPU_SET((int)cpu, &set);
	}
	err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (err)
		uffd_die("SWAPDEV_HANDLER_CPUS=%s: %s", list, strerror(err));
}

static void *handler_main(void *arg)
{
	uint64_t last = sd_now_ns();

	(void)arg;
	pin_handler();
	while (!atomic_load(&handler_stop)) {
		struct uffd_msg msg;
		ssize_t n;

		uffd_shmem_poll(); /* other processes' evictions, while it spins */
		n = read(uffd, &msg, sizeof(msg));

		if (n == (ssize_t)sizeof(msg)) {
			if (msg.event == UFFD_EVENT_PAGEFAULT)
				handle_fault(&msg);
			last = sd_now_ns();
			continue;
		}
		/*
		 * EBADF before any region was registered: the program closed every descriptor it
		 * did not open itself, as a process launcher does before its exec (the JVM's
		 * jspawnhelper, which inherits LD_PRELOAD from a JVM running on the device). Nothing
		 * of it is on the device: stop serving quietly; the exec'd program loads its own.
		 */
		if (n < 0 && errno == EBADF && next_gen == 1) {
			enabled = 0;
			return NULL;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			uffd_die("read(uffd): %s", strerror(errno));
		if (sd_now_ns() - last > spin_ns) {
			struct pollfd p = {.fd = uffd, .events = POLLIN};

			/* A forked child's trace, written in place, is kept on disk while idle: a
			 * PySpark worker dies by its daemon's SIGHUP, without an exit. */
			if (forked_child)
				sd_run_flush(&run);
			poll(&p, 1, 100);
		}
	}
	return NULL;
}

static void register_range(uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		uffd_die("UFFDIO_REGISTER %#lx+%zu: %s", (unsigned long)start, len, strerror(errno));
}

/* Under the lock. */
/*
 * SWAPDEV_NODE_SHM with "%n" replaced by this process's network namespace inode (the
 * number in /proc/self/ns/net): one environment names each node's own segment when the
 * nodes are network namespaces and an application passes the same environment to every
 * node's processes (Spark's spark.executorEnv). NULL if unset or empty.
 */
static const char *node_shm_name(char *buf, size_t len)
{
	const char *tmpl = getenv("SWAPDEV_NODE_SHM"), *pct;
	unsigned long long ino;
	char link[64];
	ssize_t n;

	if (!tmpl || !*tmpl)
		return NULL;
	pct = strstr(tmpl, "%n");
	if (!pct) {
		if (strlen(tmpl) >= len)
			uffd_die("SWAPDEV_NODE_SHM=%s: too long", tmpl);
		return strcpy(buf, tmpl);
	}
	n = readlink("/proc/self/ns/net", link, sizeof(link) - 1);
	if (n > 0)
		link[n] = 0;
	if (n <= 0 || sscanf(link, "net:[%llu]", &ino) != 1)
		uffd_die("SWAPDEV_NODE_SHM=%s: cannot read this process's network namespace "
		    "(/proc/self/ns/net)", tmpl);
	if (snprintf(buf, len, "%.*s%llu%s", (int)(pct - tmpl), tmpl, ino, pct + 2) >= (int)len)
		uffd_die("SWAPDEV_NODE_SHM=%s: too long", tmpl);
	return buf;
}

static void node_join(void);
/* SWAPDEV_NODE_SHM names a segment that does not exist (start-up, swapdev_init). */
static char node_missing[256];

/*
 * Under the lock, when the process registers a region: a process whose node segment does
 * not exist may not hold memory on the device. It runs on while it registers nothing: `ip
 * netns exec`, run with a holder's environment (SWAPDEV_NODE_SHM with %n) in the root
 * namespace before it enters the node's, names a segment nobody made.
 */
static void node_check(void)
{
	if (node_missing[0])
		uffd_die("SWAPDEV_NODE_SHM=%s: no such segment (the node's segments are made by "
			 "whoever starts the node: disaggsim emulate, device.per_node_segments)",
			 node_missing);
}

static void register_region(uintptr_t start, size_t len)
{
	size_t npages = len / PAGE;
	int i;

	node_check();

	for (i = 0; i < MAX_REGIONS && regions[i].gen; i++)
		;
	if (i == MAX_REGIONS)
		return; /* stays ordinary local memory */
	regions[i].state = sys_mmap(NULL, npages, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	regions[i].store = sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	regions[i].tag = sys_mmap(NULL, npages * sizeof(uint32_t), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (regions[i].state == MAP_FAILED || regions[i].store == MAP_FAILED ||
	    regions[i].tag == MAP_FAILED)
		uffd_die("cannot map %zu bytes of store: %s", len, strerror(errno));
	/* Small pages, as the registered range's: pagemap's exclusive bit (charge_exclusive)
	 * describes a transparent huge page as a whole. */
	syscall(SYS_madvise, regions[i].store, len, MADV_NOHUGEPAGE);
	register_range(start, len);
	regions[i].start = start;
	regions[i].npages = npages;
	regions[i].page_base = next_page_base;
	regions[i].gen = next_gen++;
	next_page_base += npages;
}

/* Under the lock: forget region r (its mapping is gone or unregistered). */
static void drop_region(struct region *r)
{
	syscall(SYS_munmap, r->state, r->npages);
	syscall(SYS_munmap, r->tag, r->npages * sizeof(uint32_t));
	syscall(SYS_munmap, r->store, r->npages * PAGE);
	if (r->uncharged)
		syscall(SYS_munmap, r->uncharged, r->npages);
	memset(r, 0, sizeof(*r));
}

/* What release_range does besides forgetting the pages' states. */
#define REL_MATERIALIZE 1 /* bring inactive and remote pages back into the mapping first */
#define REL_UNMAPPED 2    /* the mapping is gone: drop a region it covered wholly */

/*
 * Under the lock. Forget [addr, addr+len) in every region (their queue entries are dropped
 * when a hand reaches them): the pages read as the kernel gives them from now on (present
 * ones keep their data, missing ones fault as untouched). A region stays registered and
 * tracked while its mapping exists, whatever part of it was forgotten: only REL_UNMAPPED
 * of the whole region drops it (dropping it on madvise(MADV_DONTNEED) of the whole region,
 * as before, left the range registered and untracked).
 */
static void release_range(uintptr_t addr, size_t len, int how)
{
	uint64_t gone = 0, gone_charged = 0;
	int i;

	for (i = 0; i < MAX_REGIONS; i++) {
		struct region *r = &regions[i];
		uintptr_t end = r->start + r->npages * PAGE;
		uintptr_t lo, hi;
		uint64_t p, p0, p1;

		if (!r->gen || addr >= end || addr + len <= r->start)
			continue;
		lo = addr > r->start ? addr : r->start;
		hi = addr + len < end ? addr + len : end;
		p0 = (lo - r->start) / PAGE;
		p1 = (hi - r->start + PAGE - 1) / PAGE;
		for (p = p0; p < p1; p++) {
			if (r->state[p] & ST_LOCAL) {
				gone++;
				gone_charged += (uint64_t)leave_charged(r, p);
			}
			if (r->state[p] & ST_INACTIVE)
				evict_ops->left_inactive(evict_st);
			if ((how & REL_MATERIALIZE) && (r->state[p] & (ST_INACTIVE | ST_REMOTE)))
				copy_in(r->start + p * PAGE, r->store + p * PAGE);
			if (r->state[p])
				paging_ops->forget(paging_st, r->page_base + p);
			r->state[p] = 0;
		}
		if ((how & REL_UNMAPPED) && lo == r->start && hi == end)
			drop_region(r);
	}
	if (gone)
		local_add(-(int64_t)gone, -(int64_t)gone_charged);
	node_publish();
}

/*
 * Under the lock, in the application's mapping calls (and the exit): wait while another
 * thread forks, so that the child's copy of the device's state matches its mappings.
 * Without a fork in progress: one atomic load.
 */
static void wait_fork_locked(void)
{
	pid_t forker;

	while ((forker = atomic_load(&fork_tid)) && forker != (pid_t)syscall(SYS_gettid))
		pthread_cond_wait(&fork_done, &lock);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int tracked = (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) && (prot & PROT_WRITE) &&
		      len >= min_map_bytes && !(flags & MAP_HUGETLB);
	int shared = uffd_shmem_wants(len, prot, flags, min_map_bytes);
	void *p;

	if (!enabled || (!(flags & MAP_FIXED) && !tracked && !shared))
		return sys_mmap(addr, len, prot, flags, fd, off);
	/* Under the lock: the handler must not take pages out of a range being replaced (a
	 * JVM uncommits its heap with mmap(MAP_FIXED, PROT_NONE): copying from it crashed). */
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	p = sys_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (flags & MAP_FIXED)) {
		release_range((uintptr_t)p, len, REL_UNMAPPED); /* the old pages are gone */
		uffd_shmem_release(uffd, (uintptr_t)p, len);
	}
	if (p != MAP_FAILED && shared)
		uffd_shmem_register(uffd, (uintptr_t)p, (len + PAGE - 1) & ~(PAGE - 1));
	if (p != MAP_FAILED && tracked) {
		syscall(SYS_madvise, p, len, MADV_NOHUGEPAGE);
		register_region((uintptr_t)p, (len + PAGE - 1) & ~(PAGE - 1));
	}
	pthread_mutex_unlock(&lock);
	return p;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
	int ret;

	if (!enabled)
		return (int)syscall(SYS_munmap, addr, len);
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	ret = (int)syscall(SYS_munmap, addr, len);
	if (ret == 0) {
		release_range((uintptr_t)addr, len, REL_UNMAPPED);
		uffd_shmem_release(uffd, (uintptr_t)addr, len);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	void *new_addr, *ret;
	int i;

	va_start(ap, flags);
	new_addr = va_arg(ap, void *);
	va_end(ap);
	if (!enabled)
		return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	/* The moved (or grown) mapping leaves userfaultfd (no UFFD_FEATURE_EVENT_REMAP): every
	 * region it touches comes home whole, then is unregistered and dropped; before, only
	 * the moved part came home and the rest of the region's remote pages read as zeros. */
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	for (i = 0; i < MAX_REGIONS; i++) {
		struct region *r = &regions[i];
		struct uffdio_range rg;

		if (!r->gen || (uintptr_t)old >= r->start + r->npages * PAGE ||
		    (uintptr_t)old + old_len <= r->start)
			continue;
		rg = (struct uffdio_range){.start = r->start, .len = r->npages * PAGE};
		release_range(r->start, r->npages * PAGE, REL_MATERIALIZE);
		ioctl(uffd, UFFDIO_UNREGISTER, &rg);
		drop_region(r);
	}
	uffd_shmem_release(uffd, (uintptr_t)old, old_len); /* the moved range is unregistered */
	ret = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	pthread_mutex_unlock(&lock);
	return ret;
}

int madvise(void *addr, size_t len, int advice)
{
	int ret;

	if (!enabled || !(advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE))
		return (int)syscall(SYS_madvise, addr, len, advice);
	/* The pages read as zeros from now on (MADV_FREE: zeros or their data; the device
	 * takes zeros); the mapping stays registered and tracked. */
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	ret = (int)syscall(SYS_madvise, addr, len, advice);
	if (ret == 0)
		release_range((uintptr_t)addr, len, 0);
	pthread_mutex_unlock(&lock);
	return ret;
}

/*
 * mprotect(): a page the application cannot read any more must not be read by the device
 * either (the eviction's copy would fault in the handler thread and kill the process). Its
 * inactive and remote pages come home and the range leaves the device's view, its pages
 * staying in the page table; an access faults (SIGSEGV) in the kernel as without the
 * device. If the application opens the range again, its pages stay local (not counted in
 * the budget) until it maps the range anew or drops them (MADV_DONTNEED).
 */
int mprotect(void *addr, size_t len, int prot)
{
	int ret;

	if (!enabled || (prot & PROT_READ))
		return (int)syscall(SYS_mprotect, addr, len, prot);
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	release_range((uintptr_t)addr, len, REL_MATERIALIZE);
	ret = (int)syscall(SYS_mprotect, addr, len, prot);
	pthread_mutex_unlock(&lock);
	return ret;
}

#define PM_PRESENT (1ull << 63)
#define PM_EXCLUSIVE (1ull << 56) /* PM_MMAP_EXCLUSIVE: mapped by this process only */
#define PM_CHUNK 512

/* The pagemap entries of n pages from addr (Linux Documentation/admin-guide/mm/pagemap.rst),
 * or die naming the file. */
static void read_pagemap(int fd, uintptr_t addr, uint64_t n, uint64_t *out)
{
	ssize_t got = pread(fd, out, n * 8, (off_t)(addr / PAGE * 8));

	if (got != (ssize_t)(n * 8))
		uffd_die("/proc/self/pagemap at %#lx: %s", (unsigned long)addr,
		    got < 0 ? strerror(errno) : "short read");
}

/*
 * A forked child's inherited pages that are no longer shared are charged to the node. A
 * page inherited at the fork is shared copy-on-write with the process it came from, which
 * holds its charge; it becomes this process's own page (pagemap bit 56, PM_MMAP_EXCLUSIVE,
 * in the mapping that holds it: the application's range for a mapped page, the store for
 * an inactive one) when either process writes it (a copy-on-write break: a new page), when
 * the other copy leaves (evicted, unmapped, the process gone), or when this process takes
 * it out to its store (CLOCK: a copy). bench/pagemap_cow_probe.py measured the bit on this
 * kernel. The entries are read without the lock, 512 pages at a time, and applied under it
 * to the pages still uncharged in the same region (a page can only become exclusive, or
 * leave: no fork can make it shared again before the next read, atfork_prepare reads
 * first). The charges enter the node's count as unsettled until make_room has run.
 * Returns the pages charged.
 */
static uint64_t charge_exclusive(void)
{
	uint64_t app[PM_CHUNK], store[PM_CHUNK], total = 0;
	int fd, i;

	if (!__atomic_load_n(&uncharged_pages, __ATOMIC_RELAXED))
		return 0;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		uffd_die("/proc/self/pagemap: %s (needed to charge a forked child's pages once "
			 "they stop being shared copy-on-write)", strerror(errno));
	for (i = 0; i < MAX_REGIONS; i++) {
		uint64_t c = 0;

		for (;;) {
			struct region *r = &regions[i];
			const uint8_t *next;
			uintptr_t start, store_start;
			uint32_t gen;
			uint64_t n, j, k = 0;

			pthread_mutex_lock(&lock);
			next = r->gen && r->uncharged && c < r->npages
				       ? memchr(r->uncharged + c, 1, r->npages - c)
				       : NULL;
			if (!next) {
				pthread_mutex_unlock(&lock);
				break;
			}
			c = (uint64_t)(next - r->uncharged);
			n = r->npages - c < PM_CHUNK ? r->npages - c : PM_CHUNK;
			gen = r->gen;
			start = r->start + c * PAGE;
			store_start = (uintptr_t)r->store + c * PAGE;
			pthread_mutex_unlock(&lock);
			read_pagemap(fd, start, n, app);
			read_pagemap(fd, store_start, n, store);
			pthread_mutex_lock(&lock);
			for (j = 0; r->gen == gen && j < n; j++) {
				uint64_t e = r->state[c + j] & ST_INACTIVE ? store[j] : app[j];

				if (r->uncharged[c + j] && (r->state[c + j] & ST_LOCAL) &&
				    (e & PM_PRESENT) && (e & PM_EXCLUSIVE)) {
					r->uncharged[c + j] = 0;
					k++;
				}
			}
			if (k) {
				uncharged_pages -= k;
				node_charged_pages += k;
				if (my_slot) { /* unsettled first: another fault's peak sample */
					late_charged += k;
					atomic_fetch_add(&my_slot->unsettled, k);
					sd_node_add_local(node, my_slot, (int64_t)k);
				}
			}
			pthread_mutex_unlock(&lock);
			total += k;
			c += n;
		}
	}
	close(fd);
	return total;
}

/*
 * The reclaim thread of a process on a node segment: waits on its slot's request counter
 * (a process-shared futex, woken by the process that posted the request, 100 ms slices so
 * that it sees reclaim_stop) and gives up one eviction batch per request, under the device
 * lock as the handler evicts (the paging policy's swap-outs, logged in this process's
 * trace); then wakes the handlers waiting for the node to go under its budget. In a forked
 * child holding inherited pages it also charges those no longer shared (charge_exclusive,
 * every RECONCILE_NS) and makes room for them, as a copy-on-write fault charges and
 * reclaims in the kernel.
 */
static void *reclaim_main(void *arg)
{
	struct sd_node_slot *s = arg;

	atomic_store(&s->reclaim_tid, (int32_t)syscall(SYS_gettid));
	while (!atomic_load(&reclaim_stop)) {
		uint32_t req = sd_node_wait_request(
		    s, __atomic_load_n(&uncharged_pages, __ATOMIC_RELAXED) ? RECONCILE_NS
									  : RECLAIM_IDLE_NS);
		uint64_t before;

		if (charge_exclusive()) {
			pthread_mutex_lock(&lock);
			wait_fork_locked();
			if (my_slot == s)
				make_room();
			pthread_mutex_unlock(&lock);
		}
		if (req == atomic_load(&s->done))
			continue;
		pthread_mutex_lock(&lock);
		wait_fork_locked();
		if (my_slot == s && local_pages) {
			before = local_pages;
			evict_ops->evict(evict_st);
			node_publish();
			node_served_pages += before - local_pages;
			atomic_fetch_add(&s->out_for_others, before - local_pages);
		}
		atomic_store(&s->done, req);
		pthread_mutex_unlock(&lock);
		sd_node_wake_under(node); /* also when nothing was freed: the waiters pick again */
	}
	return NULL;
}

/* Under the lock: take a slot on the node for this process (no page charged yet) and start
 * its reclaim thread; without a free slot the process keeps its own budget. */
static void node_join(void)
{
	my_slot = sd_node_take_slot(node, (int32_t)getpid());
	if (!my_slot) {
		fprintf(stderr, "swapdev uffd: SWAPDEV_NODE_SHM: all %d slots are taken by live "
			"processes; process %d keeps a budget of its own\n", SD_NODE_SLOTS,
			(int)getpid());
		return;
	}
	node_publish();
	atomic_store(&reclaim_stop, 0);
	if (uffd_thread_start_arg(&reclaimer, reclaim_main, my_slot))
		uffd_die("cannot start the reclaim thread");
}

/* Under the lock: leave the node (the pages this process holds leave its count); returns 1
 * if a reclaim thread was told to stop (join it without the lock). */
static int node_leave(void)
{
	struct sd_node_slot *s = my_slot;

	if (!s)
		return 0;
	my_slot = NULL;
	atomic_store(&reclaim_stop, 1);
	sd_node_wake_slot(s);
	sd_node_release(node, s);
	return 1;
}

/*
 * The application is about to close the device's descriptor: a forked child closing every
 * descriptor before its exec (CPython's subprocess without vfork uses close_range) or to
 * become a daemon. Once closed, the kernel unregisters the ranges and a remote page would
 * read as zeros; so every region's inactive and remote pages come home first, the regions
 * are unregistered and dropped, the handler thread is stopped (joined: it must not read a
 * descriptor number the application reuses), and the process runs on without the device.
 * With nothing registered (a launcher exec'd from a process on the device, the JVM's
 * jspawnhelper) the handler stops by itself on EBADF, as before.
 */
static void stop_device(void)
{
	int i, join = 0, join_reclaimer;

	pthread_mutex_lock(&lock);
	wait_fork_locked();
	if (enabled && next_gen > 1) {
		for (i = 0; i < MAX_REGIONS; i++) {
			struct region *r = &regions[i];
			struct uffdio_range rg;

			if (!r->gen)
				continue;
			rg = (struct uffdio_range){.start = r->start, .len = r->npages * PAGE};
			release_range(r->start, r->npages * PAGE, REL_MATERIALIZE);
			ioctl(uffd, UFFDIO_UNREGISTER, &rg);
			drop_region(r);
		}
		uffd_shmem_stop();
		enabled = 0;
		atomic_store(&handler_stop, 1);
		join = 1;
	}
	join_reclaimer = node_leave();
	pthread_mutex_unlock(&lock);
	if (join)
		pthread_join(handler, NULL);
	if (join_reclaimer)
		pthread_join(reclaimer, NULL);
}

/* 1 if this is the device's own process, 0 in a vfork child of it (CPython's subprocess
 * vforks, and its child closes every descriptor from 3 up with close_range before the exec:
 * stopping the device there would unregister and bring home the parent's pages and stop the
 * parent's device, in the memory both share; closing the child's copy of the descriptor
 * leaves the parent's registration alone). */
static int in_device_process(void)
{
	return getpid() == device_pid;
}

int close(int fd)
{
	if (fd >= 0 && fd == uffd && enabled && in_device_process())
		stop_device();
	return (int)syscall(SYS_close, fd);
}

int close_range(unsigned int first, unsigned int last, int flags)
{
	if (uffd >= 0 && (unsigned int)uffd >= first && (unsigned int)uffd <= last && enabled &&
	    !(flags & CLOSE_RANGE_CLOEXEC) && in_device_process())
		stop_device();
	return (int)syscall(SYS_close_range, first, last, flags);
}

void closefrom(int lowfd)
{
	if (uffd >= 0 && uffd >= lowfd && enabled && in_device_process())
		stop_device();
	if (syscall(SYS_close_range, (unsigned int)(lowfd < 0 ? 0 : lowfd), ~0u, 0))
		for (int fd = lowfd < 0 ? 0 : lowfd; fd < 65536; fd++) /* no close_range */
			syscall(SYS_close, fd);
}

/* A userfaultfd of this process's own (non-blocking, closed on exec), or die. The thread id
 * of each fault tells the forking thread's faults from the others' (atfork_prepare). */
static int open_uffd(void)
{
	struct uffdio_api api = {.api = UFFD_API,
				 .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_THREAD_ID |
					     uffd_shmem_features()};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		uffd_die("userfaultfd: %s (root, or vm.unprivileged_userfaultfd=1)", strerror(errno));
	if (ioctl(fd, UFFDIO_API, &api))
		uffd_die("UFFDIO_API: %s", strerror(errno));
	return fd;
}

/*
 * fork(). Without UFFD_FEATURE_EVENT_FORK the kernel takes the child's copies of the
 * registered ranges out of userfaultfd (dup_userfaultfd): a page the parent holds remote or
 * inactive is missing there and would read as zeros. With EVENT_FORK the child's ranges stay
 * registered, on a new userfaultfd that the parent's handler reads: the parent would serve
 * the child's faults but could not take the child's pages out (madvise acts on the caller's
 * own address space), and its stores change after the fork while the child's pages must
 * keep the fork's data. So the child runs a device of its own, started from the parent's:
 *   - atfork_prepare waits for another thread's fork and marks this thread as forking.
 *     Until atfork_parent the handler serves only this thread's faults (the fork handlers
 *     registered before the device's run after it: a preloaded jemalloc takes its locks,
 *     touching its metadata), without evicting, every change to the device's state made
 *     before the copy that wakes the thread; other threads' faults are deferred and the
 *     application's mapping calls wait (wait_fork_locked). So whenever the forking thread
 *     runs, the fork's system call included, the page table matches the device's state.
 *   - atfork_child, in the child's only thread: the regions, page states, eviction queues,
 *     paging state and stores are the parent's at the fork (private mappings, copied on
 *     write). It opens a userfaultfd, registers every region on it, checks that no page the
 *     device holds remote or inactive is in its page table (a fork handler run before this
 *     one would have read zeros there: the child exits naming the page instead of running
 *     on wrong data), restarts its outputs (sd_run_forked_child) and starts its handler.
 *     Its budget is SWAPDEV_LOCAL_BYTES, its own, as for any process that loads the
 *     library (the pages it shares with its parent copy-on-write then count in both), or
 *     on a node a slot of its own in the node's budget (node_join), where its inherited
 *     local pages are uncharged: they count once, in the parent, until each stops being
 *     shared (charge_exclusive).
 *   - atfork_parent serves the deferred faults and evicts back under the budget.
 */
static void atfork_prepare(void)
{
	/* Before the fork shares them again: the inherited pages this process owns by now are
	 * charged here, not left uncharged in both processes. */
	charge_exclusive();
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	if (enabled)
		atomic_store(&fork_tid, (pid_t)syscall(SYS_gettid));
	pthread_mutex_unlock(&lock);
}

static void atfork_parent(void)
{
	uint64_t before;
	size_t i;

	if (atomic_load(&fork_tid) != (pid_t)syscall(SYS_gettid))
		return; /* the device was off at the fork */
	pthread_mutex_lock(&lock);
	atomic_store(&fork_tid, 0);
	for (i = 0; i < ndeferred; i++)
		serve_locked(deferred[i].arg.pagefault.address & ~(PAGE - 1), 0);
	ndeferred = 0;
	if (my_slot) /* the forking thread's faults, and pages charged late: under the budget */
		make_room();
	else
		do { /* back under the budget (the forking thread's faults, logged swap-outs) */
			before = local_pages;
			if (local_pages > budget_pages)
				evict_ops->evict(evict_st);
		} while (local_pages > budget_pages && local_pages < before);
	pthread_cond_broadcast(&fork_done);
	pthread_mutex_unlock(&lock);
}

/* In the forked child: die if a page of r the device holds remote or inactive (missing in
 * the parent's page table at the fork) is in the child's page table. */
static void check_child_pages(const struct region *r)
{
	unsigned char *vec = uffd_map(r->npages, "a residency vector");
	uint64_t p;

	if (mincore((void *)r->start, r->npages * PAGE, vec))
		uffd_die("forked child: mincore %#lx+%zu: %s", (unsigned long)r->start,
		    r->npages * PAGE, strerror(errno));
	for (p = 0; p < r->npages; p++)
		if ((vec[p] & 1) && (r->state[p] & (ST_REMOTE | ST_INACTIVE)))
			uffd_die("forked child: the page at %#lx, remote on the device, was touched before "
			    "the device registered it (a fork handler registered before the device's "
			    "ran first): it reads zeros", (unsigned long)(r->start + p * PAGE));
	syscall(SYS_munmap, vec, r->npages);
}

/*
 * In the forked child: register pages [p0, p1) of r. A region can hold a mapping the device
 * does not track (the application mapped a file with MAP_FIXED over part of it: its pages
 * were forgotten, and the parent's registration of the rest stands): registering the
 * whole range then fails, so it is split until each part registers or is one such page.
 * A page that cannot be registered and holds the device's data kills the child (named).
 */
static void register_child_pages(const struct region *r, uint64_t p0, uint64_t p1)
{
	struct uffdio_register reg = {
		.range = {.start = r->start + p0 * PAGE, .len = (p1 - p0) * PAGE},
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	if (!ioctl(uffd, UFFDIO_REGISTER, &reg))
		return;
	if (p1 - p0 > 1) {
		register_child_pages(r, p0, p0 + (p1 - p0) / 2);
		register_child_pages(r, p0 + (p1 - p0) / 2, p1);
	} else if (r->state[p0] & (ST_REMOTE | ST_INACTIVE)) {
		uffd_die("forked child: UFFDIO_REGISTER %#lx: %s (the page is remote on the device)",
		    (unsigned long)reg.range.start, strerror(errno));
	}
}

/* In a forked child on a node: every local page is inherited, shared copy-on-write with the
 * parent, which holds its charge: flagged uncharged (the parent's flags, if it had any, are
 * a copy of the parent's and are overwritten); then the reclaim thread is woken to start
 * reading pagemap. */
static void mark_inherited(void)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_REGIONS; i++) {
		struct region *r = &regions[i];
		uint64_t p;

		if (!r->gen)
			continue;
		if (!r->uncharged)
			r->uncharged = uffd_map(r->npages, "the uncharged flags");
		for (p = 0; p < r->npages; p++)
			r->uncharged[p] = (r->state[p] & ST_LOCAL) != 0;
	}
	uncharged_pages = local_pages;
	node_inherited_pages = local_pages;
	pthread_mutex_unlock(&lock);
	sd_node_wake_slot(my_slot);
}

static void atfork_child(void)
{
	int i;

	pthread_mutex_init(&lock, NULL);
	pthread_cond_init(&fork_done, NULL);
	ndeferred = 0; /* their threads are the parent's */
	my_slot = NULL; /* the parent's (the segment is shared with it) */
	node_fallbacks = node_requests = node_served_pages = node_inherited_pages = 0;
	if (!atomic_load(&fork_tid)) { /* the device was off in the parent */
		enabled = 0;
		run.trace = NULL; /* the parent's buffered trace is the parent's to write */
		run.hist_path = NULL;
		run.reads = run.writes = 0;
		return;
	}
	atomic_store(&fork_tid, 0);
	/* The parent's (the system call: an ioctl on it would act on the parent's pages). */
	syscall(SYS_close, uffd);
	uffd = open_uffd();
	for (i = 0; i < MAX_REGIONS; i++) {
		if (!regions[i].gen)
			continue;
		check_child_pages(&regions[i]);
		register_child_pages(&regions[i], 0, regions[i].npages);
	}
	uffd_shmem_forked_child(uffd);
	if (sd_run_forked_child(&run))
		_exit(2);
	forked_child = 1;
	child_pid = getpid();
	device_pid = child_pid;
	late_charged = 0;
	uncharged_pages = 0;
	node_charged_pages = 0;
	if (node) /* a slot of its own, holding no page */
		node_join();
	if (my_slot) /* its local pages are its parent's, charged there */
		mark_inherited();
	if (uffd_thread_start(&handler, handler_main))
		uffd_die("forked child: cannot start the handler thread");
}
__attribute__((constructor)) static void swapdev_init(void)
{
	struct sd_io io = {io_request, io_end_batch, io_wait_until, &run.delay, NULL};
	char shm_buf[256];
	const char *shm;
	uint64_t local_bytes, spin_us, evict_batch, inactive_permille;
	int ev = sd_policy_lookup("SWAPDEV_EVICTION", getenv("SWAPDEV_EVICTION"), sd_evict_names,
				  SD_EVICT_COUNT, SD_EVICT_FIFO);
	int pg = sd_policy_lookup("SWAPDEV_PAGING", getenv("SWAPDEV_PAGING"), sd_paging_names,
				  SD_PAGING_COUNT, SD_PAGING_DEMAND);

	if (ev < 0 || pg < 0 || uffd_shmem_init(&lock))
		_exit(2);
	if (sd_env_u64("SWAPDEV_LOCAL_BYTES", 0, &local_bytes) ||
	    sd_env_u64("SWAPDEV_MIN_MAP_BYTES", 1 << 20, &min_map_bytes) ||
	    sd_env_u64("SWAPDEV_EVICT_BATCH", 32, &evict_batch) ||
	    sd_env_u64("SWAPDEV_SPIN_US", 500, &spin_us) ||
	    sd_env_u64("SWAPDEV_INACTIVE_PERMILLE", 500, &inactive_permille))
		_exit(2);
	if (local_bytes < PAGE * 64 || evict_batch == 0 || inactive_permille > 1000)
		uffd_die("SWAPDEV_LOCAL_BYTES must be >= 256 KiB, SWAPDEV_EVICT_BATCH >= 1 and "
		    "SWAPDEV_INACTIVE_PERMILLE <= 1000");
	if (sd_run_init(&run))
		_exit(2);
	run.report_minor = ev == SD_EVICT_CLOCK;
	budget_pages = local_bytes / PAGE;
	if (evict_batch > budget_pages)
		evict_batch = budget_pages;
	spin_ns = spin_us * 1000;
	evict_ops = sd_evict_table[ev];
	evict_st = evict_ops->create(budget_pages, evict_batch, inactive_permille);
	paging_ops = sd_paging_table[pg];
	paging_st = paging_ops->create(&io, budget_pages);
	if (!evict_st || !paging_st)
		_exit(2);
	zero_page = uffd_map(PAGE, "the zero page");
	/* Joined here, before the device is on: the reclaim thread's start may allocate, and
	 * an allocator's mmap would come back to the device (under its lock, in mmap()). */
	if ((shm = node_shm_name(shm_buf, sizeof(shm_buf)))) {
		node = sd_node_attach(shm, budget_pages);
		if (node)
			node_join();
		else
			strcpy(node_missing, shm);
		uffd_shmem_set_node(node); /* its shared regions' pages are the node's, slot or not */
	}
	uffd = open_uffd();
	if (uffd_thread_start(&handler, handler_main) ||
	    pthread_atfork(atfork_prepare, atfork_parent, atfork_child))
		uffd_die("cannot start the handler thread");
	device_pid = getpid();
	enabled = 1;
}

__attribute__((destructor)) static void swapdev_fini(void)
{
	struct sd_run outputs;
	int on_node;

	/* The handler keeps serving faults until the process is gone; only the outputs close.
	 * The process leaves its node: from here its pages count in its own budget only. */
	pthread_mutex_lock(&lock);
	wait_fork_locked();
	if (enabled) {
		evict_ops->finish(evict_st, stderr);
		paging_ops->finish(paging_st, sd_now_ns(), stderr);
		uffd_shmem_finish(uffd, stderr);
	}
	on_node = node_leave();
	if (on_node && node_requests + node_served_pages + node_fallbacks + node_inherited_pages)
		fprintf(stderr, "swapdev uffd node: %llu eviction requests to other processes, "
			"%llu pages given up on their requests, %llu fallbacks (nobody else freed "
			"pages within %llu ms: evicted locally), %llu pages inherited at fork "
			"(uncharged while shared copy-on-write; %llu charged since)\n",
			(unsigned long long)node_requests, (unsigned long long)node_served_pages,
			(unsigned long long)node_fallbacks,
			(unsigned long long)(NODE_WAIT_NS / 1000000),
			(unsigned long long)node_inherited_pages,
			(unsigned long long)node_charged_pages);
	pthread_mutex_lock(&run.mu);
	outputs = run; /* the counters, histograms and output files as they are now */
	run.trace = NULL; /* faults served from here on are not recorded */
	run.hist_path = NULL;
	pthread_mutex_unlock(&run.mu);
	pthread_mutex_unlock(&lock);
	/* Written without the lock: asprintf, fopen and the trace's stdio buffer are heap
	 * memory that may be registered and remote (a preloaded jemalloc's), and the handler
	 * serves its faults under the lock: holding it here deadlocked (numpy-sort at 25 %
	 * local with SWAPDEV_HIST: the exit's asprintf faulted, the handler waited). */
	sd_run_finish(&outputs, "uffd");
}

/*
 * _exit() in a forked child writes the device's outputs first (its trace and summary), as
 * exit() does through the destructor: a forked worker commonly ends with _exit (Python's
 * os._exit: PySpark's daemon and multiprocessing's fork workers), and its trace would stay
 * a temporary file. Only in a forked child's own process (not in a vfork child of it,
 * which shares its memory); every other process's _exit is the system call as before.
 */
void _exit(int status)
{
	if (forked_child && getpid() == child_pid)
		swapdev_fini();
	for (;;)
		syscall(SYS_exit_group, status);
}
void _Exit(int status) __attribute__((alias("_exit")));
