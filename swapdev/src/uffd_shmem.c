/*
 * The uffd backend's shared anonymous memory: MAP_SHARED | MAP_ANONYMOUS mappings (shmem,
 * PostgreSQL's shared buffers) made while the device runs, of at least
 * SWAPDEV_MIN_MAP_BYTES, with SWAPDEV_SHARED_LOCAL_FRACTION set (unset: not registered,
 * as before). doc/swapdev.md, "Shared anonymous memory", gives the kernel's rules cited.
 *
 * The page cache is the store: a shmem page's data stays in the mapping's page cache
 * whatever the device does, so no data ever moves and no write can be lost. Each region is
 * registered MISSING | MINOR (UFFDIO_REGISTER_MODE_MINOR needs UFFD_FEATURE_MINOR_SHMEM):
 *   - a MISSING fault is the page's first touch (not in the page cache): resolved with
 *     UFFDIO_ZEROPAGE (a zeroed page enters the page cache), no delay, not remote;
 *   - a MINOR fault is an access to a page in the page cache that this process's page table
 *     does not map: if the region's state says remote, the paging policy's fetch is paid
 *     (the private pages' paging_ops->fetch: same delay model, trace and counters), the page
 *     becomes resident; either way UFFDIO_CONTINUE maps the page-cache page.
 * Taking page p remote: the evicting process zaps its own PTEs (MADV_DONTNEED: on a
 * shared mapping it drops the page-table entries only; the page stays in the page cache)
 * and appends p to the region's eviction log; the region's state, its FIFO and its log
 * are MAP_SHARED (made when the region is registered, before any fork, so every process
 * of the mapping sees them). madvise acts on the caller's own page table, so every other
 * process of the region applies the log (zaps p in its own page table) from a thread of
 * its device woken by a futex on the log's sequence number, from its handler's loop and
 * before serving each of its faults in the region, and acknowledges it. Until every other
 * process has acknowledged, p is SH_EVICTING: still local and counted resident (an access
 * by a process that has zapped it keeps it, no delay); the last acknowledgement makes it
 * SH_REMOTE. So no access skips a fetch through a stale PTE; instead the region holds more
 * than its budget while acknowledgements are pending (the exit summary's "max resident"
 * beside "max held"). An eviction not acknowledged within ACK_TIMEOUT_NS (a process that
 * died or exec'd without leaving) completes anyway, counted "forced".
 *
 * Budget: one per region, shared by every process that maps it: SWAPDEV_SHARED_LOCAL_FRACTION
 * x the region's pages. A fault that makes a page resident when the region is at its budget
 * first sends the SWAPDEV_EVICT_BATCH oldest resident pages of the region remote (FIFO over
 * the region, whichever process made them resident; the paging policy's write-back of each
 * contiguous run, logged in the evicting process's trace). Shared pages count only in their
 * region's budget, private pages only in SWAPDEV_LOCAL_BYTES (each process's own).
 * On a node (SWAPDEV_NODE_SHM, uffd_shmem_set_node) the region has no budget of its own:
 * its resident pages count once in the node's count (sd_node_add_shared, with its evicting
 * ones), each page entering its FIFO is stamped by the node's clock, and the node's room
 * making (uffd_preload.c, find_room) compares the FIFO head's stamp (uffd_shmem_oldest)
 * with the slots' and has a batch of the region evicted (uffd_shmem_evict). The region
 * leaves the node's count with its last process (the kernel frees a shmem page with the
 * mapping's last user, and uncharges it then).
 *
 * fork(): a shared mapping's PTEs are not copied to the child (the kernel's
 * vma_needs_copy), and without UFFD_FEATURE_EVENT_FORK the child's copy of the range is not
 * registered; the child's device registers each region again on its own userfaultfd (the
 * same MAP_SHARED state and log, not a copy) and starts applying the log from its current
 * end.
 *
 * Locking: every hook runs under the device's lock (uffd_preload.c); the region's state,
 * FIFO and log are changed under its mutex (process-shared, robust: a process killed
 * holding it does not block the others), taken inside the device's lock. A fetch is waited
 * for outside the region's mutex (the page is SH_FETCHING; another process faulting on it
 * waits for the fetch to end, as the kernel's page lock makes it wait).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sd_user.h"
#include "uffd_node.h"
#include "uffd_shmem.h"
#include "uffd_space.h"

#define SHM_REGIONS 16
#define LOG_CAP (1u << 16)  /* eviction log entries per region (a ring) */
#define MAX_BATCH 1024u     /* SWAPDEV_EVICT_BATCH is capped to this for shared regions */
#define SH_UNTOUCHED 0
#define SH_RESIDENT 1
#define SH_REMOTE 2
#define SH_FETCHING 3
#define SH_EVICTING 4 /* chosen for eviction, still mapped by another process: still local */
/* The device page numbers of shared pages (the rmem trace's) start here, apart from the
 * private regions' (which count up from 0 in each process). */
#define G_BASE (1ull << 29)
/* How long a fault waits for another process's fetch of the same page at most. */
#define FETCH_WAIT_NS 10000000ull
#define ZAPPER_TIMEOUT_NS 50000000l
/* An eviction another process has not acknowledged within this long is completed anyway
 * (a process that died, or exec'd, without leaving the region): counted as "forced". */
#define ACK_TIMEOUT_NS 1000000000ull

struct log_entry {
	uint32_t page;
	int32_t pid;   /* the evicting process (it has zapped its own PTE) */
	uint64_t t_ns; /* when it chose the page (CLOCK_MONOTONIC) */
	uint32_t gen;  /* the page's eviction number (an acknowledgement of an older one, or of
			* an eviction cancelled since, is ignored) */
};

/* One region's shared state (MAP_SHARED), followed by uint64_t stamp[npages] (on a node:
 * the node's clock when the page entered the FIFO), uint32_t fifo[npages], uint32_t
 * gen[npages], uint16_t pend[npages] and uint8_t state[npages]. */
struct shm_hdr {
	pthread_mutex_t mu;
	uint64_t npages, budget, batch, g_base;
	uint64_t on_node;              /* charged to the node of the process that registered it */
	uint64_t oldest;               /* on a node: the FIFO head's stamp (read without mu) */
	uint64_t nproc;                /* processes whose device has the region registered */
	uint64_t resident, evicting;   /* local pages; those of them being evicted */
	uint64_t max_resident, max_held, max_evicting, forced;
	uint64_t fifo_head, fifo_len;  /* resident pages, oldest first (a ring of npages) */
	uint32_t done;                 /* log entries before this one are acknowledged */
	_Atomic uint32_t seq;          /* log entries ever written; the futex word */
	struct log_entry log[LOG_CAP];
};

/* This process's view of a region, and what this process did there. */
struct shm_region {
	uintptr_t start;
	size_t npages, hdr_bytes;
	struct shm_hdr *h; /* NULL: free slot */
	uint32_t applied;  /* log entries this process has applied */
	uint64_t first_touch, fetches, minor, kept, waited, evicted;
	uint64_t zapped, zapped_mapped, lag_sum_ns, lag_max_ns, overruns;
};

static struct shm_region shm[SHM_REGIONS];
static int shm_on;
static double local_fraction;
static uint64_t batch_cfg;
static pthread_mutex_t *dev_lock;
static uint64_t next_g = G_BASE;
static pid_t my_pid;
static struct sd_node *node_seg; /* the process's node (uffd_shmem_set_node), or NULL */
static int zapper_running;
static atomic_int zapper_stop;
/* Scratch, under the device's lock. */
static uint32_t evicted[MAX_BATCH];
static struct log_entry pending[LOG_CAP];

static uint64_t *stamp_of(struct shm_hdr *h)
{
	return (uint64_t *)(h + 1);
}

static uint32_t *fifo_of(struct shm_hdr *h)
{
	return (uint32_t *)(stamp_of(h) + h->npages);
}

static uint32_t *gen_of(struct shm_hdr *h)
{
	return fifo_of(h) + h->npages;
}

static uint16_t *pend_of(struct shm_hdr *h)
{
	return (uint16_t *)(gen_of(h) + h->npages);
}

static uint8_t *state_of(struct shm_hdr *h)
{
	return (uint8_t *)(pend_of(h) + h->npages);
}

/* Under the region's mutex: the region's resident and evicting pages change by dr and de,
 * and so does the node's count if the region is charged to it. */
static void count(struct shm_hdr *h, int64_t dr, int64_t de)
{
	h->resident += (uint64_t)dr;
	h->evicting += (uint64_t)de;
	if (h->on_node && node_seg)
		sd_node_add_shared(node_seg, dr, de);
}

/* Under the region's mutex: publish the FIFO head's stamp (the region's oldest page). */
static void publish_oldest(struct shm_hdr *h)
{
	uint64_t o = h->fifo_len ? stamp_of(h)[fifo_of(h)[h->fifo_head]] : SD_NODE_NO_PAGE;

	__atomic_store_n(&h->oldest, o, __ATOMIC_RELAXED);
}

/* Under the region's mutex: an evicting page has been zapped everywhere (or its
 * acknowledgements timed out): it is remote now. */
static void evicted_everywhere(struct shm_hdr *h, uint32_t q)
{
	__atomic_store_n(&state_of(h)[q], SH_REMOTE, __ATOMIC_RELAXED);
	count(h, -1, -1);
}

/* Under the region's mutex: this process has zapped the page of entry e (or leaves the
 * region): one acknowledgement fewer to wait for. */
static void acknowledge(struct shm_hdr *h, const struct log_entry *e)
{
	uint16_t *pend = pend_of(h);

	if (state_of(h)[e->page] == SH_EVICTING && gen_of(h)[e->page] == e->gen &&
	    pend[e->page] && --pend[e->page] == 0)
		evicted_everywhere(h, e->page);
}

/* Under the region's mutex: complete the evictions whose acknowledgements are overdue
 * (ACK_TIMEOUT_NS), oldest first, and move h->done past the completed ones. */
static void expire_acks(struct shm_hdr *h, uint64_t now)
{
	uint32_t s = atomic_load_explicit(&h->seq, memory_order_relaxed);

	if (s - h->done > LOG_CAP)
		h->done = s - LOG_CAP;
	for (; h->done != s; h->done++) {
		const struct log_entry *e = &h->log[h->done % LOG_CAP];

		if (state_of(h)[e->page] != SH_EVICTING || gen_of(h)[e->page] != e->gen)
			continue; /* completed or cancelled */
		if (e->t_ns > now || now - e->t_ns < ACK_TIMEOUT_NS)
			break; /* (logged by another process after this one read its clock) */
		pend_of(h)[e->page] = 0;
		evicted_everywhere(h, e->page);
		h->forced++;
	}
}

static void hlock(struct shm_hdr *h)
{
	int e = pthread_mutex_lock(&h->mu);

	if (e == EOWNERDEAD)
		pthread_mutex_consistent(&h->mu); /* its holder died: the state is as it left it */
	else if (e)
		uffd_die("shared region lock: %s", strerror(e));
}

int uffd_shmem_init(pthread_mutex_t *lock)
{
	const char *f = getenv("SWAPDEV_SHARED_LOCAL_FRACTION");
	char *end;

	dev_lock = lock;
	my_pid = getpid();
	if (!f || !*f)
		return 0;
	local_fraction = strtod(f, &end);
	if (end == f || *end || !(local_fraction > 0 && local_fraction <= 1)) {
		fprintf(stderr, "swapdev: SWAPDEV_SHARED_LOCAL_FRACTION=%s: expected a number in "
			"(0, 1]\n", f);
		return -1;
	}
	if (sd_env_u64("SWAPDEV_EVICT_BATCH", 32, &batch_cfg))
		return -1;
	if (batch_cfg > MAX_BATCH)
		batch_cfg = MAX_BATCH;
	shm_on = 1;
	return 0;
}

void uffd_shmem_set_node(struct sd_node *n)
{
	node_seg = n;
}

uint64_t uffd_shmem_features(void)
{
	return shm_on ? UFFD_FEATURE_MINOR_SHMEM : 0;
}

int uffd_shmem_wants(size_t len, int prot, int flags, uint64_t min_map_bytes)
{
	int type = flags & MAP_TYPE;

	return shm_on && (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) &&
	       (flags & MAP_ANONYMOUS) && !(flags & MAP_HUGETLB) &&
	       (prot & (PROT_READ | PROT_WRITE)) == (PROT_READ | PROT_WRITE) &&
	       len >= min_map_bytes;
}

static struct shm_region *find(uintptr_t addr)
{
	for (int i = 0; i < SHM_REGIONS; i++)
		if (shm[i].h && addr >= shm[i].start && addr < shm[i].start + shm[i].npages * PAGE)
			return &shm[i];
	return NULL;
}

static int register_on(int uffd, uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR,
	};

	return ioctl(uffd, UFFDIO_REGISTER, &reg);
}

static void futex_wake_all(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Zap this process's PTEs of pages [p, p+n) of r (the pages stay in the page cache). */
static void zap(const struct shm_region *r, uint64_t p, uint64_t n)
{
	if (syscall(SYS_madvise, r->start + p * PAGE, n * PAGE, MADV_DONTNEED))
		uffd_die("shared region: MADV_DONTNEED %#lx: %s",
			(unsigned long)(r->start + p * PAGE), strerror(errno));
}

/*
 * Apply the other processes' log entries this process has not applied: zap the pages here,
 * counting those still mapped (pagemap bit 63, present) and the lag. An overrun (more than
 * LOG_CAP entries behind) zaps the whole region: every page's next access here faults, and
 * the region's state decides (a resident page is a minor fault without delay).
 */
static void apply_log(struct shm_region *r)
{
	struct shm_hdr *h = r->h;
	uint32_t s = atomic_load_explicit(&h->seq, memory_order_acquire), a = r->applied, i;
	size_t n = 0, k;
	uint64_t now;
	int pm;

	if (s == a)
		return;
	if (s - a <= LOG_CAP)
		for (i = a; i != s; i++) {
			const struct log_entry *e = &h->log[i % LOG_CAP];

			if (__atomic_load_n(&e->pid, __ATOMIC_RELAXED) == my_pid)
				continue;
			pending[n].page = __atomic_load_n(&e->page, __ATOMIC_RELAXED);
			pending[n].pid = __atomic_load_n(&e->pid, __ATOMIC_RELAXED);
			pending[n].gen = __atomic_load_n(&e->gen, __ATOMIC_RELAXED);
			pending[n++].t_ns = __atomic_load_n(&e->t_ns, __ATOMIC_RELAXED);
		}
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&h->seq, memory_order_relaxed) - a > LOG_CAP) {
		/* Entries were overwritten while read: zap everything; their evictions complete
		 * by the timeout (expire_acks). */
		zap(r, 0, r->npages);
		r->overruns++;
		r->applied = atomic_load_explicit(&h->seq, memory_order_acquire);
		return;
	}
	r->applied = s;
	if (!n)
		return;
	pm = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	now = sd_now_ns();
	for (k = 0; k < n; k++) {
		uint64_t p = pending[k].page, pte = 1ull << 63;

		if (pm >= 0 && pread(pm, &pte, sizeof(pte), (off_t)((r->start / PAGE + p) * 8)) !=
				       (ssize_t)sizeof(pte))
			pte = 1ull << 63; /* unknown: counted as mapped (an upper bound) */
		if (pte >> 63) {
			uint64_t lag = now > pending[k].t_ns ? now - pending[k].t_ns : 0;

			r->zapped_mapped++;
			r->lag_sum_ns += lag;
			if (lag > r->lag_max_ns)
				r->lag_max_ns = lag;
			zap(r, p, 1);
		}
		r->zapped++;
	}
	if (pm >= 0)
		syscall(SYS_close, pm);
	hlock(h); /* zapped here: acknowledge */
	for (k = 0; k < n; k++)
		acknowledge(h, &pending[k]);
	pthread_mutex_unlock(&h->mu);
}

/* The device's thread that applies the logs when another process evicts. */
static void *zapper_main(void *arg)
{
	(void)arg;
	for (;;) {
		_Atomic uint32_t *w = NULL;
		uint32_t seen = 0;
		struct timespec to = {0, ZAPPER_TIMEOUT_NS};

		pthread_mutex_lock(dev_lock);
		if (atomic_load(&zapper_stop)) {
			zapper_running = 0;
			pthread_mutex_unlock(dev_lock);
			return NULL;
		}
		for (int i = 0; i < SHM_REGIONS; i++) {
			if (!shm[i].h)
				continue;
			apply_log(&shm[i]);
			if (!w) {
				w = &shm[i].h->seq;
				seen = shm[i].applied;
			}
		}
		pthread_mutex_unlock(dev_lock);
		/* Woken by the next entry of the first region (others: by the timeout). */
		if (w)
			syscall(SYS_futex, w, FUTEX_WAIT, seen, &to, NULL, 0);
		else
			nanosleep(&to, NULL);
	}
}

void uffd_shmem_poll(void)
{
	int behind = 0;

	if (!zapper_running)
		return;
	for (int i = 0; i < SHM_REGIONS && !behind; i++) {
		struct shm_hdr *h = __atomic_load_n(&shm[i].h, __ATOMIC_RELAXED);

		behind = h && atomic_load_explicit(&h->seq, memory_order_relaxed) !=
				      __atomic_load_n(&shm[i].applied, __ATOMIC_RELAXED);
	}
	if (!behind)
		return;
	pthread_mutex_lock(dev_lock);
	for (int i = 0; i < SHM_REGIONS; i++)
		if (shm[i].h)
			apply_log(&shm[i]);
	pthread_mutex_unlock(dev_lock);
}

static void start_zapper(void)
{
	pthread_t t;

	if (zapper_running)
		return;
	atomic_store(&zapper_stop, 0);
	if (uffd_thread_start(&t, zapper_main))
		uffd_die("cannot start the shared regions' thread");
	pthread_detach(t);
	zapper_running = 1;
}

void uffd_shmem_register(int uffd, uintptr_t start, size_t len)
{
	struct shm_region *r = NULL;
	size_t npages = len / PAGE, bytes;
	pthread_mutexattr_t at;
	struct shm_hdr *h;

	for (int i = 0; i < SHM_REGIONS && !r; i++)
		if (!shm[i].h)
			r = &shm[i];
	if (!r)
		return; /* stays ordinary shared memory */
	bytes = (sizeof(*h) +
		 npages * (sizeof(uint64_t) + 2 * sizeof(uint32_t) + sizeof(uint16_t) + 1) +
		 PAGE - 1) & ~(PAGE - 1);
	h = (void *)syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		uffd_die("cannot map %zu bytes of shared region state: %s", bytes, strerror(errno));
	pthread_mutexattr_init(&at);
	pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&h->mu, &at);
	pthread_mutexattr_destroy(&at);
	h->npages = npages;
	h->nproc = 1;
	h->oldest = SD_NODE_NO_PAGE;
	if (node_seg) {
		/* The node's one budget: no budget of the region's own (its line reports the
		 * node's). */
		h->on_node = 1;
		h->budget = atomic_load(&node_seg->budget_pages);
	} else {
		h->budget = (uint64_t)(local_fraction * (double)npages);
		if (h->budget < 1)
			h->budget = 1;
	}
	/* A batch as the private pages' (the device caps it to the budget). */
	h->batch = batch_cfg < h->budget ? batch_cfg : h->budget;
	h->g_base = next_g;
	next_g += npages;
	if (register_on(uffd, start, npages * PAGE))
		uffd_die("UFFDIO_REGISTER (MINOR) %#lx+%zu: %s", (unsigned long)start, len,
			strerror(errno));
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->npages = npages;
	r->hdr_bytes = bytes;
	r->h = h;
	start_zapper();
}

/* This process leaves region r: acknowledge the evictions it has not applied (it will not
 * zap them; the evictions counted it) and stop being counted. */
static void detach(struct shm_region *r)
{
	struct shm_hdr *h = r->h;
	uint32_t s, i;

	hlock(h);
	s = atomic_load_explicit(&h->seq, memory_order_relaxed);
	if (s - r->applied <= LOG_CAP)
		for (i = r->applied; i != s; i++)
			if (h->log[i % LOG_CAP].pid != my_pid)
				acknowledge(h, &h->log[i % LOG_CAP]);
	r->applied = s;
	if (h->nproc)
		h->nproc--;
	if (!h->nproc && h->on_node && node_seg) {
		/* The last process leaves: the mapping is gone with it, and its pages with the
		 * mapping (the kernel frees a shmem page, and uncharges it, with its file). */
		sd_node_add_shared(node_seg, -(int64_t)h->resident, -(int64_t)h->evicting);
		h->on_node = 0;
	}
	pthread_mutex_unlock(&h->mu);
}

static void drop(int uffd, struct shm_region *r)
{
	struct uffdio_range rg = {.start = r->start, .len = r->npages * PAGE};

	detach(r);
	if (uffd >= 0)
		ioctl(uffd, UFFDIO_UNREGISTER, &rg); /* fails harmlessly if already unmapped */
	/* The state stays mapped (the other processes' and, here, uffd_shmem_poll's, which
	 * reads it without the lock); the slot is free again. */
	__atomic_store_n(&r->h, NULL, __ATOMIC_RELAXED);
	memset(r, 0, sizeof(*r));
}

void uffd_shmem_release(int uffd, uintptr_t addr, size_t len)
{
	for (int i = 0; i < SHM_REGIONS; i++)
		if (shm[i].h && addr < shm[i].start + shm[i].npages * PAGE &&
		    addr + len > shm[i].start)
			drop(uffd, &shm[i]);
}

/* Under the region's mutex: page p enters the FIFO (newest), stamped by the node's clock
 * on a node. */
static void push_fifo(struct shm_hdr *h, uint32_t p)
{
	fifo_of(h)[(h->fifo_head + h->fifo_len) % h->npages] = p;
	h->fifo_len++;
	if (h->on_node && node_seg) {
		stamp_of(h)[p] = atomic_fetch_add(&node_seg->clock, 1);
		if (h->fifo_len == 1)
			publish_oldest(h);
	}
}

/* Under the region's mutex: page p becomes resident (counted, newest in the FIFO). */
static void push_resident(struct shm_hdr *h, uint32_t p)
{
	push_fifo(h, p);
	count(h, 1, 0);
	if (h->resident > h->max_resident)
		h->max_resident = h->resident;
	if (h->resident - h->evicting > h->max_held)
		h->max_held = h->resident - h->evicting;
}

/*
 * Under the region's mutex: choose the batch of the region's oldest resident pages and
 * log them; returns how many (in evicted[]). A page no other process maps goes remote at
 * once; else it is evicting (still local, still counted resident) until every other
 * process has zapped it (acknowledge). A page being fetched (SH_FETCHING) goes back to
 * the FIFO's tail.
 */
static unsigned choose_batch(struct shm_hdr *h, uint64_t now)
{
	uint32_t *fifo = fifo_of(h);
	uint8_t *state = state_of(h);
	unsigned n = 0;

	for (uint64_t scan = h->fifo_len; scan && n < h->batch; scan--) {
		uint32_t q = fifo[h->fifo_head];
		uint32_t s = atomic_load_explicit(&h->seq, memory_order_relaxed);

		h->fifo_head = (h->fifo_head + 1) % h->npages;
		h->fifo_len--;
		if (state[q] == SH_FETCHING) {
			push_fifo(h, q);
			continue;
		}
		if (state[q] != SH_RESIDENT)
			continue; /* cannot be: only resident pages are queued */
		gen_of(h)[q]++;
		count(h, 0, 1);
		if (h->nproc > 1) {
			__atomic_store_n(&state[q], SH_EVICTING, __ATOMIC_RELAXED);
			pend_of(h)[q] = (uint16_t)(h->nproc - 1);
			if (h->evicting > h->max_evicting)
				h->max_evicting = h->evicting;
		} else {
			evicted_everywhere(h, q);
		}
		__atomic_store_n(&h->log[s % LOG_CAP].gen, gen_of(h)[q], __ATOMIC_RELAXED);
		__atomic_store_n(&h->log[s % LOG_CAP].page, q, __ATOMIC_RELAXED);
		__atomic_store_n(&h->log[s % LOG_CAP].pid, my_pid, __ATOMIC_RELAXED);
		__atomic_store_n(&h->log[s % LOG_CAP].t_ns, now, __ATOMIC_RELAXED);
		atomic_store_explicit(&h->seq, s + 1, memory_order_release);
		evicted[n++] = q;
	}
	if (h->on_node)
		publish_oldest(h);
	return n;
}

/* Under the region's mutex, before a page becomes resident: complete the overdue
 * evictions; then, without a node, when the pages held (resident and not being evicted)
 * reach the region's budget, choose the batch of its oldest (choose_batch). On a node the
 * region has no budget of its own: the node's make_room chose before (uffd_shmem_evict). */
static unsigned make_room(struct shm_hdr *h)
{
	uint64_t now = sd_now_ns();

	expire_acks(h, now);
	if (h->on_node || h->resident - h->evicting < h->budget)
		return 0;
	return choose_batch(h, now);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* After make_room, outside the region's mutex: wake the other processes, zap this
 * process's PTEs and write each contiguous run back (the paging policy). */
static void finish_evict(struct shm_region *r, unsigned n)
{
	unsigned i = 0;

	if (!n)
		return;
	futex_wake_all(&r->h->seq);
	qsort(evicted, n, sizeof(evicted[0]), cmp_u32);
	while (i < n) {
		unsigned j = i + 1;

		while (j < n && evicted[j] == evicted[j - 1] + 1)
			j++;
		zap(r, evicted[i], j - i);
		uffd_shared_write(r->h->g_base + evicted[i], j - i);
		i = j;
	}
	uffd_end_evict();
	r->evicted += n;
}

static void wake(int uffd, uintptr_t addr)
{
	struct uffdio_range rg = {.start = addr, .len = PAGE};

	ioctl(uffd, UFFDIO_WAKE, &rg);
}

/* A first touch: a zeroed page into the page cache, mapped here. EEXIST: another process
 * put it there first; the thread retries (a minor fault then). */
static void zero_fill(int uffd, uintptr_t addr)
{
	struct uffdio_zeropage z = {.range = {.start = addr, .len = PAGE}, .mode = 0};

	while (ioctl(uffd, UFFDIO_ZEROPAGE, &z)) {
		if (errno == EAGAIN) {
			z.zeropage = 0;
			continue;
		}
		wake(uffd, addr);
		return;
	}
}

/* Map the page-cache page at addr. EEXIST (mapped meanwhile) or a page removed meanwhile
 * (MADV_REMOVE: ENOENT/EFAULT): the thread retries. */
static void map_cached(int uffd, uintptr_t addr)
{
	struct uffdio_continue c = {.range = {.start = addr, .len = PAGE}, .mode = 0};

	while (ioctl(uffd, UFFDIO_CONTINUE, &c)) {
		if (errno == EAGAIN) {
			c.mapped = 0;
			continue;
		}
		wake(uffd, addr);
		return;
	}
}

int uffd_shmem_fault(int uffd, const struct uffd_msg *m)
{
	uintptr_t addr = m->arg.pagefault.address & ~(PAGE - 1);
	struct shm_region *r;
	struct shm_hdr *h;
	uint8_t *state;
	uint32_t p;
	unsigned n = 0;
	int st;

	if (!shm_on)
		return 0;
	if (!(r = find(addr))) {
		if (!(m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR))
			return 0;
		wake(uffd, addr); /* a region dropped meanwhile: unregistered, it retries */
		return 1;
	}
	h = r->h;
	state = state_of(h);
	p = (uint32_t)((addr - r->start) / PAGE);
	apply_log(r);
	if (h->on_node) {
		/* Room in the node's budget first, outside the region's mutex (the node may choose
		 * this region's oldest pages, or wait for other processes): when the page's state,
		 * read without the mutex, says this fault makes it resident. A state changed
		 * meanwhile only makes room once too often or too few (as a fault of another
		 * process in flight). */
		st = __atomic_load_n(&state[p], __ATOMIC_RELAXED);
		if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR ? st == SH_REMOTE ||
									   st == SH_UNTOUCHED
								       : st != SH_RESIDENT && st != SH_FETCHING &&
									   st != SH_EVICTING)
			uffd_shared_make_room();
	}
	hlock(h);
	st = state[p];
	if (!(m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR)) {
		/* Not in the page cache: a first touch (or a page the application removed, whose
		 * data is zeros now: local, nothing to fetch). */
		if (st != SH_RESIDENT && st != SH_FETCHING && st != SH_EVICTING) {
			n = make_room(h);
			__atomic_store_n(&state[p], SH_RESIDENT, __ATOMIC_RELAXED);
			push_resident(h, p);
			/* Remote and not in the page cache: removed by the application, or sent
			 * remote by another process before the first toucher's UFFDIO_ZEROPAGE: no
			 * data to fetch either way. */
			r->first_touch += st == SH_UNTOUCHED;
		}
		pthread_mutex_unlock(&h->mu);
		finish_evict(r, n);
		if (h->on_node)
			uffd_shared_note_peak();
		zero_fill(uffd, addr);
		return 1;
	}
	if (st == SH_REMOTE) {
		n = make_room(h);
		__atomic_store_n(&state[p], SH_FETCHING, __ATOMIC_RELAXED);
		push_resident(h, p);
		pthread_mutex_unlock(&h->mu);
		finish_evict(r, n);
		if (h->on_node)
			uffd_shared_note_peak();
		uffd_shared_fetch(h->g_base + p);
		r->fetches++;
		hlock(h);
		__atomic_store_n(&state[p], SH_RESIDENT, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&h->mu);
	} else if (st == SH_EVICTING) {
		/* Chosen for eviction but still local (another process still maps it): it stays,
		 * no delay; the eviction's pending acknowledgements are void (gen). It is held
		 * again, so like any page made resident it first makes room: at the budget, the
		 * batch of oldest held pages goes (p, not in the FIFO while evicting, is not one
		 * of them). Without this, pages kept between two evictions held the region past
		 * its budget (71 of 64 in the concurrent ctest, 14 runs in 60). */
		n = make_room(h);
		__atomic_store_n(&state[p], SH_RESIDENT, __ATOMIC_RELAXED);
		gen_of(h)[p]++;
		pend_of(h)[p] = 0;
		count(h, 0, -1);
		push_fifo(h, p);
		if (h->resident - h->evicting > h->max_held)
			h->max_held = h->resident - h->evicting;
		r->kept++;
		pthread_mutex_unlock(&h->mu);
		finish_evict(r, n);
	} else if (st == SH_FETCHING) {
		uint64_t t0 = sd_now_ns();

		pthread_mutex_unlock(&h->mu);
		while (__atomic_load_n(&state[p], __ATOMIC_RELAXED) == SH_FETCHING &&
		       sd_now_ns() - t0 < FETCH_WAIT_NS)
			;
		r->waited++;
	} else {
		if (st == SH_UNTOUCHED) { /* in the page cache before the device saw it */
			n = make_room(h);
			__atomic_store_n(&state[p], SH_RESIDENT, __ATOMIC_RELAXED);
			push_resident(h, p);
			r->first_touch++;
		} else {
			r->minor++;
		}
		pthread_mutex_unlock(&h->mu);
		finish_evict(r, n);
		if (h->on_node)
			uffd_shared_note_peak();
	}
	map_cached(uffd, addr);
	return 1;
}

uint64_t uffd_shmem_oldest(int *which)
{
	uint64_t best = SD_NODE_NO_PAGE;

	*which = -1;
	for (int i = 0; i < SHM_REGIONS; i++) {
		uint64_t o;

		if (!shm[i].h || !shm[i].h->on_node)
			continue;
		o = __atomic_load_n(&shm[i].h->oldest, __ATOMIC_RELAXED);
		if (o < best) {
			best = o;
			*which = i;
		}
	}
	return best;
}

unsigned uffd_shmem_evict(int which)
{
	struct shm_region *r = &shm[which];
	uint64_t now;
	unsigned n;

	if (!r->h)
		return 0;
	hlock(r->h);
	now = sd_now_ns(); /* under the mutex: every entry logged is older */
	expire_acks(r->h, now);
	n = choose_batch(r->h, now);
	pthread_mutex_unlock(&r->h->mu);
	finish_evict(r, n);
	return n;
}

void uffd_shmem_settle(void)
{
	for (int i = 0; i < SHM_REGIONS; i++) {
		if (!shm[i].h)
			continue;
		apply_log(&shm[i]);
		hlock(shm[i].h);
		expire_acks(shm[i].h, sd_now_ns()); /* under the mutex: every entry is older */
		pthread_mutex_unlock(&shm[i].h->mu);
	}
}

void uffd_shmem_forked_child(int uffd)
{
	int any = 0;

	my_pid = getpid();
	zapper_running = 0; /* the parent's thread is not in the child */
	for (int i = 0; i < SHM_REGIONS; i++) {
		struct shm_region *r = &shm[i];

		if (!r->h)
			continue;
		/* No PTEs of a shared mapping are copied at fork; make sure of it. */
		zap(r, 0, r->npages);
		if (register_on(uffd, r->start, r->npages * PAGE)) {
			/* Part of it was remapped: its pages keep their data; never attached. */
			__atomic_store_n(&r->h, NULL, __ATOMIC_RELAXED);
			memset(r, 0, sizeof(*r));
			continue;
		}
		hlock(r->h); /* counted from here on: every later eviction waits for it */
		r->h->nproc++;
		r->applied = atomic_load_explicit(&r->h->seq, memory_order_relaxed);
		pthread_mutex_unlock(&r->h->mu);
		r->first_touch = r->fetches = r->minor = r->kept = r->waited = r->evicted = 0;
		r->zapped = r->zapped_mapped = r->lag_sum_ns = r->lag_max_ns = r->overruns = 0;
		any = 1;
	}
	if (any)
		start_zapper();
}

void uffd_shmem_stop(void)
{
	for (int i = 0; i < SHM_REGIONS; i++)
		if (shm[i].h)
			drop(-1, &shm[i]); /* the descriptor's close unregisters the ranges */
	atomic_store(&zapper_stop, 1);
	shm_on = 0;
}

void uffd_shmem_finish(int uffd, FILE *f)
{
	for (int i = 0; i < SHM_REGIONS; i++) {
		struct shm_region *r = &shm[i];

		if (!r->h)
			continue;
		fprintf(f,
			"swapdev uffd shmem: %zu pages, budget %llu, max held %llu, max resident %llu "
			"(%llu evicting at most), %llu forced; here: %llu first touches, %llu "
			"fetches, %llu minor, %llu kept, %llu waited, %llu evicted; %llu zapped for "
			"others, %llu mapped when zapped (lag mean %.1f us, max %.1f us), %llu "
			"overruns%s\n",
			r->npages, (unsigned long long)r->h->budget,
			(unsigned long long)r->h->max_held, (unsigned long long)r->h->max_resident,
			(unsigned long long)r->h->max_evicting, (unsigned long long)r->h->forced,
			(unsigned long long)r->first_touch, (unsigned long long)r->fetches,
			(unsigned long long)r->minor, (unsigned long long)r->kept,
			(unsigned long long)r->waited, (unsigned long long)r->evicted,
			(unsigned long long)r->zapped, (unsigned long long)r->zapped_mapped,
			r->zapped_mapped ? (double)r->lag_sum_ns / (double)r->zapped_mapped / 1e3 : 0.0,
			(double)r->lag_max_ns / 1e3, (unsigned long long)r->overruns,
			r->h->on_node ? "; on the node (budget: the node's, shared with private pages)"
				      : "");
		/* Leaving: the others stop waiting for this process's acknowledgements; the
		 * range is unregistered, so its later faults (other destructors) are ordinary. */
		drop(uffd, r);
	}
}
