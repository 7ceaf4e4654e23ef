/*
 * The uffd backend's eviction policies (policy.h struct sd_evict_ops), moved out of
 * uffd_preload.c. Both keep queues of (region slot, page) entries; an entry is stale once
 * its region is gone (generation) or a later entry for the same page was queued (tag).
 *   - fifo: the oldest local page goes remote, touched or not (FIFO of fault-in).
 *   - clock: the two-handed clock (BSD and SVR4 pageout) laid out as the kernel's active
 *     and inactive lists (mm/vmscan.c). Mapped pages form the active queue in the order
 *     they were faulted in, inactive pages the inactive queue. The front hand takes the
 *     oldest mapped page and makes it inactive (clears its reference bit) until
 *     inactive_permille of the budget is inactive (default 500: the kernel's
 *     inactive_ratio 1 below 1 GiB, mm/vmscan.c inactive_is_low); the back hand sends the
 *     oldest inactive pages remote (their data is in the store already: no copy). A page
 *     touched while inactive faults back at once (a minor refault, uffd_preload.c) and
 *     rejoins the active queue. See doc/swapdev.md, "Eviction".
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy.h"
#include "uffd_space.h"

struct ring_ent {
	uint32_t slot;
	uint32_t gen;
	uint64_t page;
	uint32_t tag;
	uint64_t stamp; /* when the page became local (the node's clock, uffd_node.h) */
};

struct ring {
	struct ring_ent *ent;
	uint64_t cap, head, len;
};

struct evict_state {
	int clock;
	uint64_t batch, inactive_target, inactive_pages, deactivated;
	struct ring active, inactive; /* fifo: only active */
};

static void ring_init(struct ring *q, uint64_t cap)
{
	q->ent = uffd_map(cap * sizeof(*q->ent), "a page queue");
	q->cap = cap;
	q->head = q->len = 0;
}

/* Queue page (local since stamp) at the back of q; its entries queued before are stale
 * from now on. */
static void ring_push(struct ring *q, uint32_t slot, uint64_t page, uint64_t stamp)
{
	struct region *r = &uffd_regions[slot];

	if (q->len == q->cap) { /* double it (after fork() brought every page home) */
		struct ring bigger;
		uint64_t i;

		ring_init(&bigger, 2 * q->cap);
		for (i = 0; i < q->len; i++)
			bigger.ent[i] = q->ent[(q->head + i) % q->cap];
		bigger.len = q->len;
		syscall(SYS_munmap, q->ent, q->cap * sizeof(*q->ent));
		*q = bigger;
	}
	q->ent[(q->head + q->len) % q->cap] =
		(struct ring_ent){slot, r->gen, page, ++r->tag[page], stamp};
	q->len++;
}

/* Pop the oldest entry that is its page's latest (of a live region); 0 if none is left. */
static int ring_pop(struct ring *q, struct ring_ent *e)
{
	while (q->len) {
		*e = q->ent[q->head];
		q->head = (q->head + 1) % q->cap;
		q->len--;
		if (uffd_regions[e->slot].gen == e->gen &&
		    uffd_regions[e->slot].tag[e->page] == e->tag)
			return 1;
	}
	return 0;
}

/* The stamp of q's oldest entry that is its page's latest, of a live region and in state
 * want (the page evict() would take first from q), dropping the stale ones before it;
 * SD_STAMP_NONE if there is none. */
static uint64_t ring_oldest(struct ring *q, uint8_t want)
{
	while (q->len) {
		const struct ring_ent *e = &q->ent[q->head];

		if (uffd_regions[e->slot].gen == e->gen &&
		    uffd_regions[e->slot].tag[e->page] == e->tag &&
		    uffd_regions[e->slot].state[e->page] == want)
			return e->stamp;
		q->head = (q->head + 1) % q->cap;
		q->len--;
	}
	return SD_STAMP_NONE;
}

/* A contiguous run of pages of one region, collected to be taken out in one go. */
struct run_acc {
	uint32_t slot;
	uint64_t first, n;
};

/* 1 if (slot, page) would not extend the run in a (flush a before adding it). */
static int run_breaks(const struct run_acc *a, uint32_t slot, uint64_t page)
{
	return a->n && !(slot == a->slot && page == a->first + a->n);
}

static void run_add(struct run_acc *a, uint32_t slot, uint64_t page)
{
	if (!a->n) {
		a->slot = slot;
		a->first = page;
	}
	a->n++;
}

static void flush_deactivate(struct run_acc *a)
{
	if (a->n)
		uffd_page_out(&uffd_regions[a->slot], a->first, a->n);
	a->n = 0;
}

static void flush_evict(struct run_acc *a, int mapped)
{
	if (a->n)
		uffd_remote_run(a->slot, a->first, a->n, mapped);
	a->n = 0;
}

static void *create(int clock, uint64_t budget_pages, uint64_t batch_pages,
		    uint64_t inactive_permille)
{
	struct evict_state *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->clock = clock;
	s->batch = batch_pages;
	s->inactive_target = budget_pages * inactive_permille / 1000;
	ring_init(&s->active, budget_pages + 64);
	if (clock)
		ring_init(&s->inactive, s->inactive_target + batch_pages + 64);
	return s;
}

static void *fifo_create(uint64_t budget_pages, uint64_t batch_pages, uint64_t permille)
{
	return create(0, budget_pages, batch_pages, permille);
}

static void *clock_create(uint64_t budget_pages, uint64_t batch_pages, uint64_t permille)
{
	return create(1, budget_pages, batch_pages, permille);
}

static void mapped(void *st, uint32_t slot, uint64_t page, uint64_t stamp)
{
	struct evict_state *s = st;

	ring_push(&s->active, slot, page, stamp);
}

/* The stamp of the page evict() would send remote first: fifo, the oldest mapped page;
 * clock, the oldest inactive page, else the oldest mapped one (the front hand's next). */
static uint64_t oldest(void *st)
{
	struct evict_state *s = st;
	uint64_t stamp = s->clock ? ring_oldest(&s->inactive, ST_INACTIVE) : SD_STAMP_NONE;

	return stamp != SD_STAMP_NONE ? stamp : ring_oldest(&s->active, ST_RESIDENT);
}

static void left_inactive(void *st)
{
	struct evict_state *s = st;

	s->inactive_pages--;
}

/* The front hand: make the oldest mapped pages inactive until want pages are. */
static void deactivate_some(struct evict_state *s, uint64_t want)
{
	struct run_acc deact = {0};
	struct ring_ent e;

	while (s->inactive_pages < want && ring_pop(&s->active, &e)) {
		if (uffd_regions[e.slot].state[e.page] != ST_RESIDENT)
			continue; /* discarded since it was queued */
		if (run_breaks(&deact, e.slot, e.page))
			flush_deactivate(&deact);
		run_add(&deact, e.slot, e.page);
		uffd_regions[e.slot].state[e.page] = ST_INACTIVE;
		s->inactive_pages++;
		s->deactivated++;
		ring_push(&s->inactive, e.slot, e.page, e.stamp);
	}
	flush_deactivate(&deact);
}

/*
 * Send a batch of local pages remote (fewer if there are not as many): FIFO, the oldest
 * mapped ones; CLOCK, the oldest inactive ones (the back hand), after the front hand has
 * made the inactive target (at least a batch) inactive.
 */
static void evict(void *st)
{
	struct evict_state *s = st;
	struct run_acc run = {0};
	struct ring_ent e;
	uint64_t taken = 0;

	if (s->clock)
		deactivate_some(s, s->inactive_target > s->batch ? s->inactive_target : s->batch);
	while (taken < s->batch && ring_pop(s->clock ? &s->inactive : &s->active, &e)) {
		uint8_t st_page = uffd_regions[e.slot].state[e.page];

		if (st_page != (s->clock ? ST_INACTIVE : ST_RESIDENT))
			continue; /* discarded since it was queued */
		if (run_breaks(&run, e.slot, e.page))
			flush_evict(&run, !s->clock);
		run_add(&run, e.slot, e.page);
		if (s->clock)
			s->inactive_pages--;
		taken++;
	}
	flush_evict(&run, !s->clock);
	uffd_end_evict();
}

static void finish(void *st, FILE *f)
{
	struct evict_state *s = st;

	if (s->clock && s->deactivated)
		fprintf(f, "swapdev uffd: clock, %llu pages made inactive\n",
			(unsigned long long)s->deactivated);
}

const struct sd_evict_ops sd_evict_FIFO = {fifo_create, mapped, left_inactive, evict, oldest,
					   finish};
const struct sd_evict_ops sd_evict_CLOCK = {clock_create, mapped, left_inactive, evict, oldest,
					    finish};
