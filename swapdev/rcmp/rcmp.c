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

#include "../src/sd_user.h"

#define LOCK_STRIPES 4096u
#define MAX_HELD 64 /* WLocks one thread may hold at once (write buffer bookkeeping) */

struct hotness {
	uint64_t cur_r, cur_w, last_ns; /* last_ns 0: never accessed */
};

struct page {
	pthread_rwlock_t rw; /* readers: accesses; writer: a migration */
	uint32_t rack;
	uint32_t slot;       /* page index inside the rack's pool */
	uint64_t used_bytes; /* slab bump pointer */
	uint64_t live_bytes; /* allocated minus freed */
	int allocated;
	int migrating;
	struct hotness remote; /* this rack's hotness of a remote page (its daemon's record) */
	struct hotness local;  /* this rack's clients' hotness of a local page */
};

struct rcmp_pool {
	struct rcmp_options opt;
	struct sd_run run;    /* inter-rack: the SWAPDEV_* model (sd_user.h) */
	struct sd_model cxl;  /* intra-rack: a fixed model, cxl latency + bandwidth */
	uint8_t **rack_base;  /* racks x rack_bytes */
	uint8_t **slot_used;  /* racks x slots: 1 if a page occupies the slot */
	uint32_t slots;       /* pages per rack */
	struct page *pages;   /* racks x slots page ids */
	uint32_t npages;      /* pages handed out so far (page ids 0..npages-1) */
	uint32_t next_rack;   /* round robin of remote allocation */
	uint32_t alloc_page;  /* the page Alloc is filling, or UINT32_MAX */
	pthread_mutex_t mu;   /* page table, allocation, hotness, stats */
	pthread_rwlock_t locks[LOCK_STRIPES];
	struct rcmp_stats st;
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
	o.alloc_policy = RCMP_ALLOC_LOCAL_FIRST;
	return o;
}

static void spin_until(uint64_t end_ns)
{
	while (sd_now_ns() < end_ns)
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
	p->rack_base = calloc(opt->racks, sizeof(*p->rack_base));
	p->slot_used = calloc(opt->racks, sizeof(*p->slot_used));
	p->pages = calloc((size_t)opt->racks * p->slots, sizeof(*p->pages));
	if (!p->rack_base || !p->slot_used || !p->pages)
		goto fail;
	for (r = 0; r < opt->racks; r++) {
		void *m = mmap(NULL, opt->rack_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) {
			fprintf(stderr, "rcmp: cannot map rack %u's pool of %llu bytes\n", r,
				(unsigned long long)opt->rack_bytes);
			goto fail;
		}
		p->rack_base[r] = m;
		p->slot_used[r] = calloc(p->slots, 1);
		if (!p->slot_used[r])
			goto fail;
	}
	for (i = 0; i < opt->racks * p->slots; i++)
		pthread_rwlock_init(&p->pages[i].rw, NULL);
	for (i = 0; i < LOCK_STRIPES; i++)
		pthread_rwlock_init(&p->locks[i], NULL);
	pthread_mutex_init(&p->mu, NULL);
	p->alloc_page = UINT32_MAX;
	p->next_rack = (opt->local_rack + 1) % opt->racks;
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
	for (r = 0; p->rack_base && r < p->opt.racks; r++) {
		if (p->rack_base[r])
			munmap(p->rack_base[r], p->opt.rack_bytes);
		if (p->slot_used)
			free(p->slot_used[r]);
	}
	free(p->rack_base);
	free(p->slot_used);
	free(p->pages);
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
	return p->rack_base[pg->rack] + (uint64_t)pg->slot * p->opt.page_bytes;
}

/* Steps 2-6 of §5.3 for page id, found hot by this thread: move it into the local rack. */
static void swap_in(struct rcmp_pool *p, uint32_t id)
{
	const uint32_t local = p->opt.local_rack;
	struct page *pg = &p->pages[id], *victim = NULL;
	uint64_t now = sd_now_ns();
	int64_t s;
	uint32_t v, from;

	pthread_mutex_lock(&p->mu);
	s = free_slot(p, local);
	if (s >= 0) /* reserved now: a concurrent swap-in or Alloc must not pick it too */
		p->slot_used[local][s] = 1;
	if (s < 0) { /* step 2: the coldest local page, unless it is hot too */
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
			pg->migrating = 0;
			pthread_mutex_unlock(&p->mu);
			return;
		}
		victim->migrating = 1;
	}
	pthread_mutex_unlock(&p->mu);
	/* Step 5: two one-sided transfers; the pages are locked meanwhile. */
	pthread_rwlock_wrlock(&pg->rw);
	if (victim)
		pthread_rwlock_wrlock(&victim->rw);
	from = pg->rack;
	{
		struct sd_req rq = sd_req_bytes(SD_OP_READ, (uint64_t)id * p->opt.page_bytes,
						p->opt.page_bytes, sd_now_ns());
		sd_run_serve(&p->run, &rq);
	}
	if (victim) {
		struct sd_req wq = sd_req_bytes(SD_OP_WRITE, 0, p->opt.page_bytes, sd_now_ns());
		uint8_t *tmp = malloc(p->opt.page_bytes);
		uint32_t vslot = victim->slot;

		sd_run_serve(&p->run, &wq);
		pthread_mutex_lock(&p->mu);
		if (tmp) { /* exchange the slots: the victim's data goes to the remote rack */
			memcpy(tmp, data_of(p, victim), p->opt.page_bytes);
			memcpy(data_of(p, victim), data_of(p, pg), p->opt.page_bytes);
			memcpy(data_of(p, pg), tmp, p->opt.page_bytes);
			victim->rack = from;
			victim->slot = pg->slot;
			pg->rack = local;
			pg->slot = vslot;
			memset(&victim->remote, 0, sizeof(victim->remote));
			memset(&victim->local, 0, sizeof(victim->local));
			p->st.victims++;
		}
		victim->migrating = 0;
		pthread_mutex_unlock(&p->mu);
		free(tmp);
		pthread_rwlock_unlock(&victim->rw);
	} else {
		memcpy(p->rack_base[local] + (uint64_t)s * p->opt.page_bytes, data_of(p, pg),
		       p->opt.page_bytes);
		pthread_mutex_lock(&p->mu);
		p->slot_used[from][pg->slot] = 0; /* local slot s: reserved above */
		pg->rack = local;
		pg->slot = (uint32_t)s;
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	if (pg->rack == local) {
		memset(&pg->remote, 0, sizeof(pg->remote)); /* step 4: the old records go */
		memset(&pg->local, 0, sizeof(pg->local));
		p->st.migrations++;
	}
	pg->migrating = 0;
	pthread_mutex_unlock(&p->mu);
	pthread_rwlock_unlock(&pg->rw);
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
	uint64_t off = offset_of(g), start = sd_now_ns();
	struct page *pg;
	int remote, hot = 0;

	if (id >= p->npages || off + n > p->opt.page_bytes)
		return -1;
	pg = &p->pages[id];
	pthread_rwlock_rdlock(&pg->rw);
	remote = pg->rack != p->opt.local_rack;
	if (!remote || (is_write && buffered_ok && n < p->opt.write_buffer_max_bytes)) {
		spin_until(start + sd_fixed_ns(&p->cxl, n));
	} else {
		struct sd_req rq = sd_req_bytes(is_write ? SD_OP_WRITE : SD_OP_READ,
						(uint64_t)id * p->opt.page_bytes + off, n, start);
		sd_run_serve(&p->run, &rq);
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
	} else if (is_write && buffered_ok && n < p->opt.write_buffer_max_bytes) {
		p->st.buffered_writes++;
		p->st.buffered_bytes += n;
		held.buffered += n;
	} else {
		double h = touch(&p->opt, &pg->remote, start, is_write);

		if (is_write)
			p->st.remote_writes++;
		else
			p->st.remote_reads++;
		if (p->opt.hot_threshold >= 0 && h > p->opt.hot_threshold && !pg->migrating) {
			pg->migrating = 1; /* step 1: one request per page at a time */
			hot = 1;
		}
	}
	pthread_mutex_unlock(&p->mu);
	pthread_rwlock_unlock(&pg->rw);
	if (hot)
		swap_in(p, id);
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

/* The cost of a lock message: a CXL access for a local page, a 16 B RPC otherwise. */
static void lock_message(struct rcmp_pool *p, rcmp_gaddr g)
{
	uint64_t start = sd_now_ns();
	int rack = rcmp_rack_of(p, g);

	if (rack == (int)p->opt.local_rack || rack < 0) {
		spin_until(start + sd_fixed_ns(&p->cxl, 16));
	} else {
		struct sd_req rq = sd_req_bytes(SD_OP_WRITE, 0, 16, start);

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
