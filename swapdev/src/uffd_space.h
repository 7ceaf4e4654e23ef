/*
 * The uffd backend's pages (uffd_preload.c), shared with its eviction policies
 * (policy_evict.c): the registered regions, each page's state, and the two mechanisms a
 * policy may use to take pages out of the application's page table.
 */
#ifndef SD_UFFD_SPACE_H
#define SD_UFFD_SPACE_H

#include <stddef.h>
#include <stdint.h>

#define PAGE 4096ul
#define MAX_REGIONS 256
#define ST_RESIDENT 1 /* mapped: local, in the application's page table */
#define ST_REMOTE 2   /* in remote memory: an access pays the paging policy's requests */
#define ST_INACTIVE 4 /* clock: local but unmapped, so that its next access faults */
#define ST_LOCAL (ST_RESIDENT | ST_INACTIVE)

struct region {
	uintptr_t start;
	size_t npages;
	uint64_t page_base; /* first page number in the device's page space (the trace's) */
	uint32_t gen;       /* 0: free slot; changes on every registration */
	uint8_t *state;
	uint32_t *tag; /* per page: the tag of its latest queue entry (older ones are stale) */
	char *store;   /* copies of the inactive and remote pages, at their offset */
	/* The backend's only (NULL but in a forked child on a node segment): per page, 1 while
	 * the page is local, inherited at the fork and not yet charged to the node (shared
	 * copy-on-write: its physical page is charged to the process it came from). */
	uint8_t *uncharged;
};

/* All under the backend's lock. */
extern struct region uffd_regions[MAX_REGIONS];
/* Write-protect, copy to the store and drop n mapped pages from first (they stay local). */
void uffd_page_out(struct region *r, uint64_t first, uint64_t n);
/* Send n local pages of region slot from first remote as one run (mapped: take them out of
 * the page table first; else they are in the store already). */
void uffd_remote_run(uint32_t slot, uint64_t first, uint64_t n, int mapped);
/* Close the eviction batch (the runs sent since the last call). */
void uffd_end_evict(void);
/* Print "swapdev uffd: <message>" to stderr and exit 2. */
void uffd_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn,
						  visibility("hidden")));
/* Map a region of npages pages of anonymous memory for the backend's own use, or die. */
void *uffd_map(size_t bytes, const char *what);

#endif
