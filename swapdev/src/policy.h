/*
 * The uffd backend's paging policies, each behind a small interface (issue #23):
 *   - eviction (policy_evict.c: fifo, clock): which local pages leave local memory;
 *   - fetch (policy_demand.c: demand; policy_comex.c: comex): what a fault on a remote page
 *     asks of the remote memory;
 *   - write-back (policy_demand.c: demand; policy_comex.c: comex): what pages leaving local
 *     memory ask of it.
 * Fetch and write-back policies see the device's page space only (page g = a region's
 * page_base + its page; the rmem trace's page numbers) and talk to the remote memory
 * through struct sd_io: they time and log requests, the backend moves the data (every
 * remote page's bytes are in the region's store, uffd_preload.c). Each is a table of
 * function pointers and a state pointer; the paging policies' names are listed once, in
 * policies.def.
 */
#ifndef SD_POLICY_H
#define SD_POLICY_H

#include <stdint.h>
#include <stdio.h>

#include "../core/sd_delay.h"

/* The remote memory as the policies see it. */
struct sd_io {
	/* Issue req; wait: the caller waits for its completion (busy-wait of its delay from
	 * req->now_ns), else it is asynchronous (timed and logged, not waited for). Returns
	 * the request's delay (ns). */
	uint64_t (*request)(void *ctx, const struct sd_req *req, int wait);
	/* The requests issued since the last call form one batch of the rmem trace. */
	void (*end_batch)(void *ctx);
	/* Wait (busy) until t_ns on the requests' clock. */
	void (*wait_until)(void *ctx, uint64_t t_ns);
	/* The model that times the requests; a policy may wrap it (comex adds T_S). */
	struct sd_delay_model *delay;
	void *ctx;
};

/* Fetch and write-back: a paging policy (both halves share one state). */
struct sd_paging_ops {
	/* Parse its SWAPDEV_* parameters and make its state; NULL after printing an error. */
	void *(*create)(const struct sd_io *io, uint64_t npages_hint);
	/* A fault on remote page g at now_ns: issue what it takes; returns when the page may
	 * be copied in (1 if a remote request was waited for, 0 if it was served locally). */
	int (*fetch)(void *st, uint64_t g, uint64_t now_ns);
	/* Pages g..g+n-1 left local memory (one contiguous run of an eviction batch). */
	void (*write)(void *st, uint64_t g, uint64_t n, uint64_t now_ns);
	/* The eviction batch that wrote the runs since the last call is over. */
	void (*end_evict)(void *st, uint64_t now_ns);
	/* Page g is no longer the device's (unmapped or discarded by the application). */
	void (*forget)(void *st, uint64_t g);
	/* Write what is pending, print counters to f (one line, "swapdev <name>: ..."). */
	void (*finish)(void *st, uint64_t now_ns, FILE *f);
};

/* The paging policies, indexed as policies.def lists them. */
enum sd_paging_kind {
#define SD_PAGING(e, name, what) SD_PAGING_##e,
#define SD_EVICT(e, name, what)
#include "policies.def"
#undef SD_PAGING
#undef SD_EVICT
	SD_PAGING_COUNT
};
/* Each policy's operations are the object sd_paging_<ENUM_SUFFIX>. */
extern const struct sd_paging_ops sd_paging_DEMAND, sd_paging_COMEX;
extern const struct sd_paging_ops *const sd_paging_table[SD_PAGING_COUNT];
extern const char *const sd_paging_names[SD_PAGING_COUNT];

/* Eviction: which local pages of the uffd backend leave local memory (policy_evict.c). */
struct sd_evict_ops {
	/* budget_pages local pages; batch_pages per eviction; inactive_permille: clock's
	 * inactive target (per mille of the budget). */
	void *(*create)(uint64_t budget_pages, uint64_t batch_pages, uint64_t inactive_permille);
	/* Region slot's page was mapped in (first touch, fetch or minor refault) at stamp (a
	 * clock that orders every page of the node: uffd_node.h). */
	void (*mapped)(void *st, uint32_t slot, uint64_t page, uint64_t stamp);
	/* A page the policy had made inactive left that state (refault, unmap, fork). */
	void (*left_inactive)(void *st);
	/* Send up to a batch of local pages remote (uffd_remote_run per contiguous run). */
	void (*evict)(void *st);
	/* The stamp of the local page evict() would send remote first; SD_STAMP_NONE if no
	 * page is local. */
	uint64_t (*oldest)(void *st);
	/* Print what it did to f (nothing if there is nothing to say). */
	void (*finish)(void *st, FILE *f);
};
#define SD_STAMP_NONE UINT64_MAX
enum sd_evict_kind {
#define SD_PAGING(e, name, what)
#define SD_EVICT(e, name, what) SD_EVICT_##e,
#include "policies.def"
#undef SD_PAGING
#undef SD_EVICT
	SD_EVICT_COUNT
};
/* Each policy's operations are the object sd_evict_<ENUM_SUFFIX>. */
extern const struct sd_evict_ops sd_evict_FIFO, sd_evict_CLOCK;
extern const struct sd_evict_ops *const sd_evict_table[SD_EVICT_COUNT];
extern const char *const sd_evict_names[SD_EVICT_COUNT];
/* The index of name in names[0..n) (policies.def), or -1; default_index if name is
 * unset or empty. On -1 prints "swapdev: VAR=name: expected one of ..." to stderr. */
int sd_policy_lookup(const char *var, const char *name, const char *const *names, int n,
		     int default_index);

#endif
