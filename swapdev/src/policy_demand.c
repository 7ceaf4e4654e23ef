/*
 * The "demand" paging policy (policy.h), the paper's device (OSDI'16 §3.1, rmem.c): a
 * fault on a remote page is one read of that page, waited for; each contiguous run of an
 * eviction batch is one write, waited for on the faulting path; the runs of one eviction
 * batch form one batch of the rmem trace, each read a batch of its own.
 */
#include <stdlib.h>

#include "policy.h"

struct demand {
	struct sd_io io;
};

static void *demand_create(const struct sd_io *io, uint64_t npages_hint)
{
	struct demand *d = calloc(1, sizeof(*d));

	(void)npages_hint;
	if (d)
		d->io = *io;
	return d;
}

static int demand_fetch(void *st, uint64_t g, uint64_t now_ns)
{
	struct demand *d = st;
	struct sd_req r = sd_req_pages(SD_OP_READ, g, 1, now_ns);

	d->io.request(d->io.ctx, &r, 1);
	d->io.end_batch(d->io.ctx);
	return 1;
}

static void demand_write(void *st, uint64_t g, uint64_t n, uint64_t now_ns)
{
	struct demand *d = st;
	struct sd_req r = sd_req_pages(SD_OP_WRITE, g, n, now_ns);

	d->io.request(d->io.ctx, &r, 1);
}

static void demand_end_evict(void *st, uint64_t now_ns)
{
	struct demand *d = st;

	(void)now_ns;
	d->io.end_batch(d->io.ctx);
}

static void demand_forget(void *st, uint64_t g)
{
	(void)st;
	(void)g;
}

static void demand_finish(void *st, uint64_t now_ns, FILE *f)
{
	(void)st;
	(void)now_ns;
	(void)f;
}

const struct sd_paging_ops sd_paging_DEMAND = {demand_create, demand_fetch, demand_write,
					       demand_end_evict, demand_forget, demand_finish};
