/*
 * The uffd backend's node segment (SWAPDEV_NODE_SHM): one local-memory budget shared by every
 * device process of an emulated node, as the swap backend's memory cgroup holds a node's
 * processes to one limit (doc/swapdev.md, "One budget per node").
 *
 * A POSIX shared memory object (shm_open(SWAPDEV_NODE_SHM)), mapped by every device process
 * of the node: the node's budget, its resident page count (the sum of its processes' local
 * pages: mapped + inactive), a clock that stamps every page as it becomes local (the global
 * FIFO order across processes, the kernel's memcg LRU in first approximation), and one slot
 * per process. A process that needs a page while the node is at its budget makes the process
 * whose oldest local page is the node's oldest give up one eviction batch: itself (a local
 * eviction, as without the segment) or another, through that process's slot (a request
 * counter its reclaim thread waits on with a process-shared futex). Every word is a C11
 * atomic; every wait is a futex wait with a timeout.
 *
 * The layout is fixed (little-endian x86-64), and swapdev/device.py reads the header's first
 * eight words (NODE_HEADER_FORMAT there): change both together.
 */
#ifndef SD_UFFD_NODE_H
#define SD_UFFD_NODE_H

#include <stdatomic.h>
#include <stdint.h>

#define SD_NODE_MAGIC 0x314e4453u /* "SDN1" */
#define SD_NODE_SLOTS 256
#define SD_NODE_NO_PAGE UINT64_MAX /* a slot's oldest when it holds no local page */

struct sd_node_slot {
	_Atomic int32_t pid;         /* 0: free; -1: being taken or reclaimed */
	_Atomic int32_t reclaim_tid; /* its reclaim thread (alive: tgkill(pid, tid, 0)) */
	_Atomic uint32_t req;        /* futex: eviction batches requested of it (a counter) */
	_Atomic uint32_t done;       /* the request counter's value it served last */
	_Atomic uint64_t local;      /* its local pages (mapped + inactive) */
	_Atomic uint64_t oldest;     /* stamp of its next page to leave (its eviction order) */
	_Atomic uint64_t out_pages;  /* pages it sent remote, for any reason */
	_Atomic uint64_t out_for_others; /* of those, pages sent on another process's request */
	_Atomic uint64_t req_ns;     /* when the pending request was posted (CLOCK_MONOTONIC) */
	_Atomic uint64_t unsettled; /* pages charged late (copy-on-write), not yet made room for */
};

struct sd_node {
	_Atomic uint32_t state;       /* 0: new, 1: being set up, 2: ready */
	uint32_t magic;               /* SD_NODE_MAGIC once ready */
	_Atomic uint64_t budget_pages; /* the node's local budget */
	_Atomic uint64_t resident;    /* the node's local pages: the sum of the slots' local */
	_Atomic uint64_t clock;       /* the next stamp */
	_Atomic uint64_t peak;        /* the largest settled count right after a fault */
	_Atomic uint64_t fallbacks;   /* faults that evicted locally: no victim answered in time */
	_Atomic uint64_t reclaimed;   /* slots of processes gone (dead, exec'd) reclaimed */
	_Atomic uint32_t under;       /* futex: bumped whenever pages leave the node */
	_Atomic uint32_t waiters;     /* handlers waiting on under */
	struct sd_node_slot slot[SD_NODE_SLOTS];
	/* Shared anonymous regions charged to the node (uffd_shmem.c): of `resident`, their
	 * resident pages, each once however many processes map it; of those, the pages being
	 * evicted (still counted until every process of the region has zapped them). */
	_Atomic uint64_t shared_resident;
	_Atomic uint64_t shared_evicting;
	uint64_t reserved[6];
};

_Static_assert(sizeof(struct sd_node_slot) == 64, "slot layout");
_Static_assert(sizeof(struct sd_node) == 64 + 64 * SD_NODE_SLOTS + 64, "segment layout");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "the segment's atomics must be lock-free (shared between processes)");

/* Open (never create: whoever starts the node makes it) and map the segment name, set it
 * up with budget_pages if new (empty); NULL if it does not exist; or die naming the
 * variable: its budget differs, it is not a node segment, it never became ready (1 s). */
struct sd_node *sd_node_attach(const char *name, uint64_t budget_pages);
/* A slot for process pid, holding no page yet (a slot still holding pid is a former image
 * of it, gone by exec: reclaimed first; when none is free, slots of processes gone are
 * reclaimed). NULL if every slot is taken by a live process. */
struct sd_node_slot *sd_node_take_slot(struct sd_node *n, int32_t pid);
/* The node's resident count less the slots' unsettled pages: what a fault's peak sample
 * measures (pages a forked child charges once they stop being shared copy-on-write, being
 * made room for, are not a fault's overshoot). */
uint64_t sd_node_settled(struct sd_node *n);
/* The node's resident count less the shared pages being evicted: the pages it holds. */
uint64_t sd_node_held(struct sd_node *n);
/* After a fault made a page local: the node's peak is raised to its settled count. */
void sd_node_note_peak(struct sd_node *n);
/* A shared region's resident pages change by d_resident, its evicting ones by d_evicting
 * (either may be negative): the node's count with them; pages leaving wake the waiters. */
void sd_node_add_shared(struct sd_node *n, int64_t d_resident, int64_t d_evicting);
/* Give slot s back: its local pages leave the node's count; waiters are woken. */
void sd_node_release(struct sd_node *n, struct sd_node_slot *s);
/* Add delta (may be negative) to s's local pages and to the node's count; pages leaving
 * wake the waiters. */
void sd_node_add_local(struct sd_node *n, struct sd_node_slot *s, int64_t delta);
/* The slot holding the node's oldest local page (NULL if none holds any), leaving out a
 * slot whose request has been pending for more than stall_ns at now_ns (a stopped process:
 * one fault waits for it, not every fault). */
struct sd_node_slot *sd_node_oldest(struct sd_node *n, uint64_t now_ns, uint64_t stall_ns);
/* 1 if the slot's process (its reclaim thread) still exists: not dead, not a zombie, not
 * exec'd into another image. */
int sd_node_alive(const struct sd_node_slot *s);
/* Reclaim slot s of a process gone: its pages leave the node's count (once, however many
 * processes find it gone). */
void sd_node_reclaim(struct sd_node *n, struct sd_node_slot *s);
/* Ask s for one eviction batch unless one is pending, and wake its reclaim thread; 1 if
 * this call posted the request (at now_ns). */
int sd_node_request(struct sd_node_slot *s, uint64_t now_ns);
/* Wait until the node's under counter moves from seen, or timeout_ns. */
void sd_node_wait_under(struct sd_node *n, uint32_t seen, uint64_t timeout_ns);
/* Wake every waiter on the node's under counter (after bumping it). */
void sd_node_wake_under(struct sd_node *n);
/* The reclaim thread: wait (timeout_ns at most) while no request is pending on s; returns
 * the request counter's current value. */
uint32_t sd_node_wait_request(struct sd_node_slot *s, uint64_t timeout_ns);
/* Wake s's reclaim thread (to stop it). */
void sd_node_wake_slot(struct sd_node_slot *s);

#endif
