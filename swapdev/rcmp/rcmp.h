/*
 * librcmp: Rcmp's memory-pool API (Wang et al., "Rcmp: Reconstructing RDMA-Based Memory
 * Disaggregation via CXL", ACM TACO 2024, papers/003, Table 4) as an access-level
 * emulation: the data lives in this process, and each Read/Write waits for the latency of
 * the tier its page lives in.
 *
 * - The page's rack is this client's rack: a CXL load/store, cxl_latency_ns +
 *   size * 8e9 / cxl_bandwidth_bps (Rcmp §6.2: 140 ns, NUMA-emulated).
 * - Another rack: the inter-rack delay of swapdev's delay core (core/sd_delay.h), configured
 *   exactly as the swap devices are (SWAPDEV_MODEL, SWAPDEV_LATENCY_NS,
 *   SWAPDEV_BANDWIDTH_BPS, SWAPDEV_FCT_FILE, ...: src/sd_user.h), so a fixed latency or an
 *   FCT distribution from a campaign is the same network for Rcmp and for page-level remote
 *   memory on the uffd device.  Rcmp's direct I/O (§4.1) by RRPC's modes (§5.5, the
 *   defines below): below rpc_threshold_bytes one request of header + data bytes (the
 *   pure RPC's round trip); from it on one request of the data bytes (the one-sided
 *   transfer), preceded by one of header bytes (the address-lookup RPC) on the first access
 *   to the page since it last moved.
 *
 * Memory: pages of page_bytes (2 MiB, §6.1), each in one rack's pool of rack_bytes; the
 * global address is (page_id << 32) | page_offset (§5.1); Alloc hands out slabs inside a
 * page (an object never spans pages).  Hot pages (§5.3): a remote page's hotness
 * alpha (Cur_r + Cur_w) + 1 (alpha = exp(-lambda dt), counts cleared after T_l) above
 * hot_threshold moves it into the local rack, to a free page or in exchange for the
 * coldest local page unless that one is hot too.  The access that finds the page hot only
 * queues a swap request (§5.3 step 1, the FIFO) and completes at the remote latency; the
 * rack's daemon (one thread per pool: its swap manager, §4.2) moves the page off the
 * clients' path: a 2 MiB one-sided READ (and a 2 MiB WRITE of the victim, posted
 * together) through the delay model, then the page-table update.  Meanwhile the page's
 * reads keep going to its old rack and its writes wait for the update (coherent: the
 * bytes being copied cannot change).  Write buffer (§5.4): while a thread holds the
 * WLock of an address, its writes of fewer than write_buffer_max_bytes (256 B, §6.5) to a
 * remote page cost one CXL store and are sent in a batch at UnLock by Rcmp's background
 * threads (counted here, not waited for).  One process emulates the clients of one rack;
 * the other racks run no clients, so their hotness never outbids this rack's (§5.3 step 3).
 *
 * Not emulated: real CXL hardware and cache coherence (the data is this process's memory),
 * the daemon's CPU and ring buffers (only their delay, inside the model), the read-hot page
 * cache.  Thread-safe: any number of threads may call Read/Write/Lock at once.
 */
#ifndef RCMP_H
#define RCMP_H

#include <stddef.h>
#include <stdint.h>

/* RRPC (§5.5): an access of fewer than RCMP_RPC_THRESHOLD_BYTES (512 B: Fig. 3's cut-off)
 * is one pure RPC, its data inside the request or the reply; a larger one is a one-sided
 * RDMA READ/WRITE, after an address-lookup RPC the first time a rack reaches the page
 * (the address is cached until the page moves).  An RPC message carries
 * RCMP_RPC_HEADER_BYTES besides its data (a global address and a size, 8 B each: the
 * arguments of Read/Write, Table 4; the paper gives no message size).  The one definition
 * of both: sim/rcmp.py's generator reads them from here. */
#define RCMP_RPC_THRESHOLD_BYTES 512
#define RCMP_RPC_HEADER_BYTES 16

typedef uint64_t rcmp_gaddr;
#define RCMP_NULL ((rcmp_gaddr)UINT64_MAX)

enum rcmp_alloc_policy {
	RCMP_ALLOC_LOCAL_FIRST = 0, /* §5.1 Alloc: the local rack, then remote racks in turn */
	RCMP_ALLOC_INTERLEAVE = 1,  /* page i in rack i % racks: §6.3's equal pre-allocation */
};

struct rcmp_options {
	uint32_t racks;              /* >= 1 */
	uint32_t local_rack;         /* this client's rack, < racks */
	uint64_t rack_bytes;         /* each rack's pool (a multiple of page_bytes) */
	uint64_t page_bytes;         /* 2 MiB (§6.1) */
	uint64_t cxl_latency_ns;     /* 140 (§6.2) */
	uint64_t cxl_bandwidth_bps;  /* 256e9 (PCIe 5.0 x8, topologies/doc/cxl.md); 0: none */
	double hot_threshold;        /* H_p, 4 (§6.1); < 0: no migration */
	double decay_per_s;          /* lambda, 0.04 (§6.1) */
	double lifetime_s;           /* T_l, 100 (§6.1) */
	uint64_t write_buffer_max_bytes; /* 256 (§6.5); 0: no write buffer */
	uint64_t rpc_threshold_bytes; /* RCMP_RPC_THRESHOLD_BYTES (§5.5) */
	uint64_t rpc_header_bytes;    /* RCMP_RPC_HEADER_BYTES */
	int alloc_policy;            /* enum rcmp_alloc_policy */
};

/* The paper's defaults for racks racks of rack_bytes each. */
struct rcmp_options rcmp_default_options(uint32_t racks, uint64_t rack_bytes);

struct rcmp_pool;

struct rcmp_stats {
	uint64_t cxl_reads, cxl_writes;       /* served by the local rack's pool */
	uint64_t remote_reads, remote_writes; /* through the delay model */
	uint64_t rpc_accesses, onesided_accesses, addr_lookups; /* RRPC's modes (§5.5) */
	uint64_t buffered_writes, buffered_bytes, buffer_flushes;
	uint64_t swap_requests, swaps_started; /* queued by clients; transfers begun by the daemon */
	uint64_t migrations, victims, swaps_stopped;
	uint64_t lock_ops;
};

/* Open the pool (Table 4 Open).  The inter-rack model comes from the SWAPDEV_* environment
 * (sd_run_init).  Returns NULL and prints "rcmp: <what>" to stderr on bad options. */
struct rcmp_pool *rcmp_open(const struct rcmp_options *opt);
/* Close it (Table 4 Close): a swap in progress completes, queued ones are dropped; writes
 * SWAPDEV_TRACE/SWAPDEV_HIST if set, frees everything. */
void rcmp_close(struct rcmp_pool *pool);

/* Alloc size bytes (1..page_bytes); RCMP_NULL if the pool is full. */
rcmp_gaddr rcmp_alloc(struct rcmp_pool *pool, size_t size);
/* Free an object of size bytes; 0, or -1 for an address that is not allocated. */
int rcmp_free(struct rcmp_pool *pool, rcmp_gaddr gaddr, size_t size);

/* Read/Write size bytes at gaddr (may span pages); 0, or -1 if out of the pool. */
int rcmp_read(struct rcmp_pool *pool, rcmp_gaddr gaddr, size_t size, void *buf);
int rcmp_write(struct rcmp_pool *pool, rcmp_gaddr gaddr, size_t size, const void *buf);

/* RLock (shared) or WLock (exclusive) the lock at gaddr, and UnLock (Table 4). */
enum { RCMP_RLOCK = 0, RCMP_WLOCK = 1 };
int rcmp_lock(struct rcmp_pool *pool, rcmp_gaddr gaddr, int mode);
int rcmp_unlock(struct rcmp_pool *pool, rcmp_gaddr gaddr);

/* Wait until the daemon's swap queue is empty and no swap is in progress (returns at once
 * with migration off). */
void rcmp_wait_migrations(struct rcmp_pool *pool);

/* The rack holding the page of gaddr now, or -1. */
int rcmp_rack_of(struct rcmp_pool *pool, rcmp_gaddr gaddr);
void rcmp_get_stats(struct rcmp_pool *pool, struct rcmp_stats *out);

#endif
