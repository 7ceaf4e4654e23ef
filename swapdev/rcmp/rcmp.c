/*
 * librcmp: Rcmp's API over emulated tiers (rcmp.h; swapdev/doc/rcmp.md).
 */
#define _GNU_SOURCE
#include "rcmp.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../src/sd_user.h"

#define LOCK_STRIPES 4096u
#define MAX_HELD 64 /* WLocks one thread may hold at once (write buffer bookkeeping) */

struct hotness {
	uint64_t cur_r, cur_w, last_ns; /* last_ns 0: never accessed */
};

struct page {
	pthread_rwlock_t rw; /* readers: accesses; writer: the daemon's page-table update */
	uint32_t rack;
	uint32_t slot;       /* frame index inside the rack's pool */
	uint64_t used_bytes; /* slab bump pointer */
	uint64_t live_bytes; /* allocated minus freed */
	int allocated;
	int migrating;       /* a swap request is queued or in progress (§5.3 step 1) */
	int write_fenced;    /* latched for a swap: writes wait for step 6, reads go on */
	uint32_t swap_victim; /* the queued swap's victim page, or UINT32_MAX */
	uint32_t swap_slot;   /* the queued swap's free local slot, or UINT32_MAX */
	uint64_t swap_t0_ns;  /* when its transfers were posted */
	int addr_cached;      /* this rack's daemon has its remote address (RRPC, §5.5) */
	struct hotness remote; /* this rack's hotness of a remote page (its daemon's record) */
	struct hotness local;  /* this rack's clients' hotness of a local page */
};

struct rcmp_pool {
	struct rcmp_options opt;
	struct sd_run run;    /* inter-rack: the SWAPDEV_* model (sd_user.h) */
	struct sd_model cxl;  /* intra-rack: a fixed model, cxl latency + bandwidth */
	uint8_t *data;        /* page id's bytes at data + id * page_bytes, wherever it lives */
	uint8_t **slot_used;  /* racks x slots: 1 if a page occupies the slot */
	uint32_t slots;       /* pages per rack */
	struct page *pages;   /* racks x slots page ids */
	uint32_t npages;      /* pages handed out so far (page ids 0..npages-1) */
	uint32_t next_rack;   /* round robin of remote allocation */
	uint32_t alloc_page;  /* the page Alloc is filling, or UINT32_MAX */
	pthread_mutex_t mu;   /* page table, allocation, hotness, stats, the swap queue */
	pthread_rwlock_t locks[LOCK_STRIPES];
	struct rcmp_stats st;
	/* The daemon's swap manager (§4.2, §5.3): a FIFO of page ids, one thread. */
	uint32_t *queue;      /* racks x slots entries: a page is queued at most once */
	uint32_t q_head, q_len;
	int daemon_busy, daemon_stop, daemon_started;
	pthread_t daemon;
	pthread_cond_t daemon_cv; /* a request was queued, or stop */
	pthread_cond_t idle_cv;   /* the queue is empty and no swap is in progress */
	pthread_cond_t fence_cv;  /* a page's write fence was lifted */
};

/* WLocks held by this thread, and the bytes it buffered under them. */
static __thread struct {
	struct rcmp_pool *pool;
	rcmp_gaddr addr[MAX_HELD];
	int mode[MAX_HELD];
	int n;
	uint64_t buffered;
} held;

struct rcmp_options rcmp_default_options(uint32_t racks, uint64_t rack_bytes)
{
	struct rcmp_options o;

	memset(&o, 0, sizeof(o));
	o.racks = racks;
	o.local_rack = 0;
	o.rack_bytes = rack_bytes;
	o.page_bytes = 2ull << 20;
	o.cxl_latency_ns = 140;
	o.cxl_bandwidth_bps = 256000000000ull;
	o.hot_threshold = 4.0;
	o.decay_per_s = 0.04;
	o.lifetime_s = 100.0;
	o.write_buffer_max_bytes = 256;
	o.rpc_threshold_bytes = RCMP_RPC_THRESHOLD_BYTES;
	o.rpc_header_bytes = RCMP_RPC_HEADER_BYTES;
	o.alloc_policy = RCMP_ALLOC_LOCAL_FIRST;
	return o;
}

static void spin_until(uint64_t end_ns)
{
	while (sd_now_ns() < end_ns)
		;
}

/* The daemon's wait for its own transfers: it sleeps, so that it does not take a CPU
 * from the clients it serves (the NIC moves the bytes, not the daemon's core). */
static void sleep_until(uint64_t end_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(end_ns / 1000000000ull),
			      .tv_nsec = (long)(end_ns % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static uint32_t page_of(rcmp_gaddr g)
{
	return (uint32_t)(g >> 32);
}

static uint64_t offset_of(rcmp_gaddr g)
{
	return g & 0xffffffffull;
}

static void *daemon_main(void *arg);

struct rcmp_pool *rcmp_open(const struct rcmp_options *opt)
{
	struct rcmp_pool *p;
	uint32_t r, i;

	if (!opt->racks || opt->local_rack >= opt->racks || !opt->page_bytes ||
	    opt->page_bytes > (1ull << 32) || !opt->rack_bytes ||
	    opt->rack_bytes % opt->page_bytes) {
		fprintf(stderr, "rcmp: options: expected racks >= 1, local_rack < racks, "
				"page_bytes in 1..2^32 and rack_bytes a positive multiple of it\n");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->opt = *opt;
	if (sd_run_init(&p->run)) {
		free(p);
		return NULL;
	}
	sd_model_init(&p->cxl, SD_MODEL_FIXED);
	sd_model_set_fixed(&p->cxl, opt->cxl_latency_ns, opt->cxl_bandwidth_bps);
	p->slots = (uint32_t)(opt->rack_bytes / opt->page_bytes);
	p->slot_used = calloc(opt->racks, sizeof(*p->slot_used));
	p->pages = calloc((size_t)opt->racks * p->slots, sizeof(*p->pages));
	p->queue = calloc((size_t)opt->racks * p->slots, sizeof(*p->queue));
	if (!p->slot_used || !p->pages || !p->queue)
		goto fail;
	/* The bytes of every rack's pool: a page keeps its bytes here when it moves (the
	 * delay model times the transfer; see swap_complete). */
	p->data = mmap(NULL, opt->rack_bytes * opt->racks, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p->data == MAP_FAILED) {
		p->data = NULL;
		fprintf(stderr, "rcmp: cannot map %u racks' pools of %llu bytes\n", opt->racks,
			(unsigned long long)opt->rack_bytes);
		goto fail;
	}
	for (r = 0; r < opt->racks; r++) {
		p->slot_used[r] = calloc(p->slots, 1);
		if (!p->slot_used[r])
			goto fail;
	}
	/* Reader-preferring (glibc's default): the daemon takes a page's write lock only for
	 * the O(1) page-table update, when no access holds the page; a writer-preferring lock
	 * would stop every new access to the page from the moment the daemon asks until this
	 * machine gets round to running it (milliseconds on 2 busy vCPUs), which Rcmp's clients,
	 * whose daemon has its own server, never see. */
	for (i = 0; i < opt->racks * p->slots; i++)
		pthread_rwlock_init(&p->pages[i].rw, NULL);
	for (i = 0; i < LOCK_STRIPES; i++)
		pthread_rwlock_init(&p->locks[i], NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->daemon_cv, NULL);
	pthread_cond_init(&p->idle_cv, NULL);
	pthread_cond_init(&p->fence_cv, NULL);
	p->alloc_page = UINT32_MAX;
	p->next_rack = (opt->local_rack + 1) % opt->racks;
	if (opt->hot_threshold >= 0) {
		if (pthread_create(&p->daemon, NULL, daemon_main, p)) {
			fprintf(stderr, "rcmp: cannot start the daemon's swap thread\n");
			goto fail;
		}
		p->daemon_started = 1;
	}
	return p;
fail:
	rcmp_close(p);
	return NULL;
}

void rcmp_close(struct rcmp_pool *p)
{
	uint32_t r;

	if (!p)
		return;
	if (p->daemon_started) { /* a swap in progress completes; queued ones are dropped */
		pthread_mutex_lock(&p->mu);
		p->daemon_stop = 1;
		pthread_cond_signal(&p->daemon_cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->daemon, NULL);
	}
	if (p->data)
		munmap(p->data, p->opt.rack_bytes * p->opt.racks);
	for (r = 0; p->slot_used && r < p->opt.racks; r++)
		free(p->slot_used[r]);
	free(p->slot_used);
	free(p->pages);
	free(p->queue);
	sd_run_finish(&p->run, "rcmp");
	free(p);
}

/* A free slot of rack r, or -1 (p->mu held). */
static int64_t free_slot(struct rcmp_pool *p, uint32_t r)
{
	uint32_t s;

	for (s = 0; s < p->slots; s++)
		if (!p->slot_used[r][s])
			return s;
	return -1;
}

/* Place a new page (p->mu held); its id, or UINT32_MAX if every rack is full. */
static uint32_t new_page(struct rcmp_pool *p)
{
	uint32_t id = p->npages, tries, r;
	int64_t s = -1;

	if (id >= p->opt.racks * p->slots)
		return UINT32_MAX;
	if (p->opt.alloc_policy == RCMP_ALLOC_INTERLEAVE) {
		for (tries = 0; tries < p->opt.racks && s < 0; tries++) {
			r = (id + tries) % p->opt.racks;
			s = free_slot(p, r);
		}
	} else {
		r = p->opt.local_rack;
		s = free_slot(p, r);
		for (tries = 0; tries < p->opt.racks && s < 0; tries++) {
			r = p->next_rack;
			p->next_rack = (p->next_rack + 1) % p->opt.racks;
			s = free_slot(p, r);
		}
	}
	if (s < 0)
		return UINT32_MAX;
	p->slot_used[r][s] = 1;
	p->pages[id].rack = r;
	p->pages[id].slot = (uint32_t)s;
	p->pages[id].allocated = 1;
	p->npages++;
	return id;
}

rcmp_gaddr rcmp_alloc(struct rcmp_pool *p, size_t size)
{
	rcmp_gaddr g = RCMP_NULL;
	uint64_t sz = (size + 7) & ~7ull; /* slabs 8-byte aligned */
	struct page *pg;

	if (!size || sz > p->opt.page_bytes)
		return RCMP_NULL;
	pthread_mutex_lock(&p->mu);
	if (p->alloc_page == UINT32_MAX ||
	    p->pages[p->alloc_page].used_bytes + sz > p->opt.page_bytes)
		p->alloc_page = new_page(p);
	if (p->alloc_page != UINT32_MAX) {
		pg = &p->pages[p->alloc_page];
		g = ((rcmp_gaddr)p->alloc_page << 32) | pg->used_bytes;
		pg->used_bytes += sz;
		pg->live_bytes += sz;
	}
	pthread_mutex_unlock(&p->mu);
	return g;
}

int rcmp_free(struct rcmp_pool *p, rcmp_gaddr g, size_t size)
{
	uint64_t sz = (size + 7) & ~7ull;
	uint32_t id = page_of(g);
	int rc = -1;

	pthread_mutex_lock(&p->mu);
	if (id < p->npages && p->pages[id].allocated && offset_of(g) + sz <= p->pages[id].used_bytes &&
	    p->pages[id].live_bytes >= sz) {
		p->pages[id].live_bytes -= sz;
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* §5.3: count an access; return the hotness alpha (Cur_r + Cur_w) + 1 before the count. */
static double touch(const struct rcmp_options *o, struct hotness *h, uint64_t now, int is_write)
{
	double alpha = 0.0, hot;

	if (h->last_ns) {
		double dt = (double)(now - h->last_ns) / 1e9;

		if (dt > o->lifetime_s)
			h->cur_r = h->cur_w = 0;
		alpha = exp(-o->decay_per_s * dt);
	}
	hot = alpha * (double)(h->cur_r + h->cur_w) + 1.0;
	if (is_write)
		h->cur_w++;
	else
		h->cur_r++;
	h->last_ns = now;
	return hot;
}

static double held_hotness(const struct rcmp_options *o, const struct hotness *h, uint64_t now)
{
	double dt;

	if (!h->last_ns)
		return 0.0;
	dt = (double)(now - h->last_ns) / 1e9;
	if (dt > o->lifetime_s)
		return 0.0;
	return exp(-o->decay_per_s * dt) * (double)(h->cur_r + h->cur_w);
}

static uint8_t *data_of(struct rcmp_pool *p, const struct page *pg)
{
	return p->data + (uint64_t)(pg - p->pages) * p->opt.page_bytes;
}

/*
 * Steps 1-2 of §5.3 for page id, found hot by the access of the calling client (p->mu held,
 * with the page's read lock): one request per page at a time; the destination is a free
 * local slot (reserved now), or the coldest local page as victim unless that one is hot
 * too (then the swap stops).  The page (and the victim) are latched: writes to them wait
 * until step 6.  The two transfers are posted now (t0) and the request goes to the daemon's
 * FIFO; the access itself is done.  PDS-Lab/Rcmp's daemon runs these steps inside the
 * handler of that same access (src/proto/rpc_daemon.cc, "PAGE SWAP"), on its own server's
 * CPU, so they happen at the access's time, not whenever this machine schedules the
 * daemon's thread.
 */
static void swap_request(struct rcmp_pool *p, uint32_t id, uint64_t now)
{
	const uint32_t local = p->opt.local_rack;
	struct page *pg = &p->pages[id], *victim = NULL;
	int64_t s;
	uint32_t v;

	s = free_slot(p, local);
	if (s >= 0) {
		p->slot_used[local][s] = 1; /* an Alloc must not pick it too */
	} else {
		double best = 0;

		for (v = 0; v < p->npages; v++) {
			double h;

			if (p->pages[v].rack != local || p->pages[v].migrating)
				continue;
			h = held_hotness(&p->opt, &p->pages[v].local, now);
			if (!victim || h < best) {
				victim = &p->pages[v];
				best = h;
			}
		}
		if (!victim || best > p->opt.hot_threshold) {
			p->st.swaps_stopped++;
			return;
		}
		victim->migrating = 1;
		victim->write_fenced = 1;
	}
	pg->migrating = 1;
	pg->write_fenced = 1;
	pg->swap_victim = victim ? (uint32_t)(victim - p->pages) : UINT32_MAX;
	pg->swap_slot = s >= 0 ? (uint32_t)s : UINT32_MAX;
	pg->swap_t0_ns = sd_now_ns();
	p->queue[(p->q_head + p->q_len) % (p->opt.racks * p->slots)] = id;
	p->q_len++;
	p->st.swap_requests++;
	pthread_cond_signal(&p->daemon_cv);
}

/*
 * Steps 5-6 for a queued page, on the daemon's thread, off the clients' path.  Step 5: the
 * 2 MiB one-sided READ of the page and, with a victim, the 2 MiB WRITE of the victim,
 * posted together at t0 (tryMigratePage submits both work requests at once), each timed by
 * the delay model; the daemon sleeps until the later one ends.  Meanwhile reads of both
 * pages take their old paths (remote for the page, CXL for the victim): a read of the
 * source during a one-sided READ of it sees the same bytes.  Step 6: the page table, under
 * both pages' write locks (no access sees the move half done); the latched writes resume
 * against the new racks.  The bytes stay where they are in this process (p->data): the
 * NIC's DMA costs Rcmp's clients no CPU, and a 4 MiB copy per swap on this machine's CPUs
 * would.
 */
static void swap_complete(struct rcmp_pool *p, uint32_t id)
{
	const uint32_t local = p->opt.local_rack;
	struct page *pg = &p->pages[id], *victim = NULL;
	uint64_t t0, d_in, d_out = 0;
	uint32_t from, old_slot;

	pthread_mutex_lock(&p->mu);
	t0 = pg->swap_t0_ns;
	if (pg->swap_victim != UINT32_MAX)
		victim = &p->pages[pg->swap_victim];
	p->st.swaps_started++;
	pthread_mutex_unlock(&p->mu);
	{
		struct sd_req rq = sd_req_bytes(SD_OP_READ, (uint64_t)id * p->opt.page_bytes,
						p->opt.page_bytes, t0);

		d_in = sd_run_model_delay(&p->run, &rq);
	}
	if (victim) {
		struct sd_req wq = sd_req_bytes(SD_OP_WRITE, 0, p->opt.page_bytes, t0);

		d_out = sd_run_model_delay(&p->run, &wq);
	}
	sleep_until(t0 + (d_in > d_out ? d_in : d_out));
	sd_run_delay(&p->run, t0, d_in);
	if (victim)
		sd_run_delay(&p->run, t0, d_out);
	/* Both write locks, in page-id order (one lock order for every pair). */
	if (victim && victim < pg)
		pthread_rwlock_wrlock(&victim->rw);
	pthread_rwlock_wrlock(&pg->rw);
	if (victim && victim > pg)
		pthread_rwlock_wrlock(&victim->rw);
	pthread_mutex_lock(&p->mu);
	from = pg->rack;
	old_slot = pg->slot;
	pg->rack = local;
	if (victim) { /* the two pages exchange their slots */
		pg->slot = victim->slot;
		victim->rack = from;
		victim->slot = old_slot;
		memset(&victim->remote, 0, sizeof(victim->remote));
		memset(&victim->local, 0, sizeof(victim->local));
		victim->addr_cached = 0; /* its new remote address must be looked up */
		victim->migrating = 0;
		victim->write_fenced = 0;
		p->st.victims++;
	} else {
		pg->slot = pg->swap_slot;
		p->slot_used[from][old_slot] = 0;
	}
	pg->addr_cached = 0; /* step 4: the old records go, the cached address too */
	memset(&pg->remote, 0, sizeof(pg->remote));
	memset(&pg->local, 0, sizeof(pg->local));
	pg->migrating = 0;
	pg->write_fenced = 0;
	p->st.migrations++;
	pthread_cond_broadcast(&p->fence_cv);
	pthread_mutex_unlock(&p->mu);
	if (victim)
		pthread_rwlock_unlock(&victim->rw);
	pthread_rwlock_unlock(&pg->rw);
}

/* The rack's daemon, its swap manager: serves the FIFO of swap requests (§5.3 step 1). */
static void *daemon_main(void *arg)
{
	struct rcmp_pool *p = arg;
	uint32_t id;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->q_len && !p->daemon_stop) {
			p->daemon_busy = 0;
			pthread_cond_broadcast(&p->idle_cv);
			pthread_cond_wait(&p->daemon_cv, &p->mu);
		}
		if (p->daemon_stop)
			break;
		id = p->queue[p->q_head];
		p->q_head = (p->q_head + 1) % (p->opt.racks * p->slots);
		p->q_len--;
		p->daemon_busy = 1;
		pthread_mutex_unlock(&p->mu);
		swap_complete(p, id);
		pthread_mutex_lock(&p->mu);
	}
	p->daemon_busy = 0;
	pthread_cond_broadcast(&p->idle_cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void rcmp_wait_migrations(struct rcmp_pool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->daemon_started && !p->daemon_stop && (p->q_len || p->daemon_busy))
		pthread_cond_wait(&p->idle_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/*
 * One inter-rack access of n bytes at byte pos of page pg, by RRPC's modes (§5.5), timed
 * by the delay model from start; the caller holds the page's read lock.  Returns 1 if it
 * was a pure RPC.  *lookup is set when an address-lookup RPC went first.
 */
static int rrpc_access(struct rcmp_pool *p, struct page *pg, uint64_t pos, uint64_t n,
		       int is_write, uint64_t start, int *lookup)
{
	int op = is_write ? SD_OP_WRITE : SD_OP_READ;

	*lookup = 0;
	if (n < p->opt.rpc_threshold_bytes) { /* pure RPC: the data rides in the message */
		struct sd_req rq = sd_req_bytes(op, pos, p->opt.rpc_header_bytes + n, start);

		sd_run_serve(&p->run, &rq);
		return 1;
	}
	pthread_mutex_lock(&p->mu);
	if (!pg->addr_cached) {
		pg->addr_cached = 1;
		*lookup = 1;
	}
	pthread_mutex_unlock(&p->mu);
	if (*lookup) { /* the page's remote address, by RPC, then cached */
		struct sd_req lq = sd_req_bytes(SD_OP_READ, pos, p->opt.rpc_header_bytes, start);

		sd_run_serve(&p->run, &lq);
		start = sd_now_ns();
	}
	{
		struct sd_req rq = sd_req_bytes(op, pos, n, start);

		sd_run_serve(&p->run, &rq);
	}
	return 0;
}

static int holds_wlock(struct rcmp_pool *p, rcmp_gaddr g)
{
	int i;

	if (held.pool != p)
		return 0;
	for (i = 0; i < held.n; i++)
		if (held.addr[i] == g && held.mode[i] == RCMP_WLOCK)
			return 1;
	return 0;
}

/* One access inside one page. */
static int access_page(struct rcmp_pool *p, rcmp_gaddr g, uint8_t *buf, uint64_t n, int is_write,
		       int buffered_ok)
{
	uint32_t id = page_of(g);
	uint64_t off = offset_of(g), start;
	struct page *pg;
	int remote, buffered, rpc = 0, lookup = 0;

	if (id >= p->npages || off + n > p->opt.page_bytes)
		return -1;
	pg = &p->pages[id];
	for (;;) {
		int fenced = 0;

		pthread_rwlock_rdlock(&pg->rw);
		if (!is_write)
			break;
		pthread_mutex_lock(&p->mu);
		fenced = pg->write_fenced;
		pthread_mutex_unlock(&p->mu);
		if (!fenced)
			break;
		/* The page is being transferred: the write waits for the page table's update
		 * (Rcmp's daemon holds the page's lock for the swap) and then goes to the
		 * page's new rack. */
		pthread_rwlock_unlock(&pg->rw);
		pthread_mutex_lock(&p->mu);
		while (pg->write_fenced)
			pthread_cond_wait(&p->fence_cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	start = sd_now_ns();
	remote = pg->rack != p->opt.local_rack;
	buffered = remote && is_write && buffered_ok && n < p->opt.write_buffer_max_bytes;
	if (!remote || buffered) {
		spin_until(start + sd_fixed_ns(&p->cxl, n));
	} else {
		rpc = rrpc_access(p, pg, (uint64_t)id * p->opt.page_bytes + off, n, is_write, start,
				  &lookup);
	}
	if (is_write)
		memcpy(data_of(p, pg) + off, buf, n);
	else
		memcpy(buf, data_of(p, pg) + off, n);
	pthread_mutex_lock(&p->mu);
	if (!remote) {
		touch(&p->opt, &pg->local, start, is_write);
		if (is_write)
			p->st.cxl_writes++;
		else
			p->st.cxl_reads++;
	} else if (buffered) {
		p->st.buffered_writes++;
		p->st.buffered_bytes += n;
		held.buffered += n;
	} else {
		double h = touch(&p->opt, &pg->remote, start, is_write);

		if (is_write)
			p->st.remote_writes++;
		else
			p->st.remote_reads++;
		if (rpc)
			p->st.rpc_accesses++;
		else
			p->st.onesided_accesses++;
		p->st.addr_lookups += (uint64_t)lookup;
		if (p->daemon_started && h > p->opt.hot_threshold && !pg->migrating)
			swap_request(p, id, start);
	}
	pthread_mutex_unlock(&p->mu);
	pthread_rwlock_unlock(&pg->rw);
	return 0;
}

static int access_range(struct rcmp_pool *p, rcmp_gaddr g, size_t size, uint8_t *buf,
			int is_write)
{
	int buffered_ok = is_write && holds_wlock(p, g);

	while (size) {
		uint64_t off = offset_of(g);
		uint64_t n = p->opt.page_bytes - off;

		if (n > size)
			n = size;
		if (access_page(p, g, buf, n, is_write, buffered_ok))
			return -1;
		buf += n;
		size -= n;
		g = ((rcmp_gaddr)(page_of(g) + 1) << 32);
	}
	return 0;
}

int rcmp_read(struct rcmp_pool *p, rcmp_gaddr g, size_t size, void *buf)
{
	return access_range(p, g, size, buf, 0);
}

int rcmp_write(struct rcmp_pool *p, rcmp_gaddr g, size_t size, const void *buf)
{
	return access_range(p, g, size, (uint8_t *)(uintptr_t)buf, 1);
}

static pthread_rwlock_t *stripe(struct rcmp_pool *p, rcmp_gaddr g)
{
	uint64_t h = g * 0x9E3779B97F4A7C15ull;

	return &p->locks[(h >> 32) % LOCK_STRIPES];
}

/* The cost of a lock message: a CXL access for a local page, otherwise a pure RPC of
 * rpc_header_bytes (RRPC's mode for locking, §5.5). */
static void lock_message(struct rcmp_pool *p, rcmp_gaddr g)
{
	uint64_t start = sd_now_ns();
	int rack = rcmp_rack_of(p, g);

	if (rack == (int)p->opt.local_rack || rack < 0) {
		spin_until(start + sd_fixed_ns(&p->cxl, p->opt.rpc_header_bytes));
	} else {
		struct sd_req rq = sd_req_bytes(SD_OP_WRITE, 0, p->opt.rpc_header_bytes, start);

		sd_run_serve(&p->run, &rq);
	}
	pthread_mutex_lock(&p->mu);
	p->st.lock_ops++;
	pthread_mutex_unlock(&p->mu);
}

int rcmp_lock(struct rcmp_pool *p, rcmp_gaddr g, int mode)
{
	if (held.pool && held.pool != p)
		return -1;
	if (held.n >= MAX_HELD || (mode != RCMP_RLOCK && mode != RCMP_WLOCK))
		return -1;
	if (mode == RCMP_WLOCK)
		pthread_rwlock_wrlock(stripe(p, g));
	else
		pthread_rwlock_rdlock(stripe(p, g));
	lock_message(p, g);
	held.pool = p;
	held.addr[held.n] = g;
	held.mode[held.n] = mode;
	held.n++;
	return 0;
}

int rcmp_unlock(struct rcmp_pool *p, rcmp_gaddr g)
{
	int i;

	for (i = 0; i < held.n; i++)
		if (held.pool == p && held.addr[i] == g)
			break;
	if (i == held.n)
		return -1;
	if (held.mode[i] == RCMP_WLOCK && held.buffered) {
		/* §5.4: the buffered writes go out in one batch by a background thread. */
		pthread_mutex_lock(&p->mu);
		p->st.buffer_flushes++;
		pthread_mutex_unlock(&p->mu);
		held.buffered = 0;
	}
	pthread_rwlock_unlock(stripe(p, g));
	held.addr[i] = held.addr[held.n - 1];
	held.mode[i] = held.mode[held.n - 1];
	if (--held.n == 0)
		held.pool = NULL;
	return 0;
}

int rcmp_rack_of(struct rcmp_pool *p, rcmp_gaddr g)
{
	uint32_t id = page_of(g);
	int r = -1;

	pthread_mutex_lock(&p->mu);
	if (id < p->npages)
		r = (int)p->pages[id].rack;
	pthread_mutex_unlock(&p->mu);
	return r;
}

void rcmp_get_stats(struct rcmp_pool *p, struct rcmp_stats *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->st;
	pthread_mutex_unlock(&p->mu);
}
