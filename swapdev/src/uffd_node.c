/*
 * The node segment of the uffd backend (uffd_node.h): the shared counters, the slots, the
 * choice of the victim and the futex waits. No page is touched here: the eviction itself
 * is uffd_preload.c's, under its device lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uffd_node.h"
#include "uffd_space.h"

/* Process-shared futex (no FUTEX_PRIVATE_FLAG: the word is in a shared mapping). */
static void futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
			      .tv_nsec = (long)(timeout_ns % 1000000000u)};

	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int n)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, n, NULL, NULL, 0);
}

struct sd_node *sd_node_attach(const char *name, uint64_t budget_pages)
{
	struct sd_node *n;
	struct stat st;
	uint32_t expect = 0;
	int fd = shm_open(name, O_RDWR, 0);
	int i;

	if (fd < 0 && errno == ENOENT)
		return NULL;
	if (fd < 0)
		uffd_die("SWAPDEV_NODE_SHM=%s: shm_open: %s", name, strerror(errno));
	if (fstat(fd, &st))
		uffd_die("SWAPDEV_NODE_SHM=%s: fstat: %s", name, strerror(errno));
	if ((size_t)st.st_size < sizeof(*n) && ftruncate(fd, sizeof(*n)))
		uffd_die("SWAPDEV_NODE_SHM=%s: ftruncate to %zu bytes: %s", name, sizeof(*n),
		    strerror(errno));
	n = (void *)syscall(SYS_mmap, NULL, sizeof(*n), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (n == MAP_FAILED)
		uffd_die("SWAPDEV_NODE_SHM=%s: mmap: %s", name, strerror(errno));
	if (atomic_compare_exchange_strong(&n->state, &expect, 1)) {
		n->magic = SD_NODE_MAGIC;
		atomic_store(&n->budget_pages, budget_pages);
		atomic_store(&n->clock, 1);
		for (i = 0; i < SD_NODE_SLOTS; i++)
			atomic_store(&n->slot[i].oldest, SD_NODE_NO_PAGE);
		atomic_store(&n->state, 2);
	}
	for (i = 0; atomic_load(&n->state) != 2; i++) {
		struct timespec ms = {0, 1000000};

		if (i == 1000)
			uffd_die("SWAPDEV_NODE_SHM=%s: the segment was not set up within 1 s", name);
		nanosleep(&ms, NULL);
	}
	if (n->magic != SD_NODE_MAGIC)
		uffd_die("SWAPDEV_NODE_SHM=%s: not a swapdev node segment", name);
	if (atomic_load(&n->budget_pages) != budget_pages)
		uffd_die("SWAPDEV_NODE_SHM=%s: the node's budget is %llu pages, SWAPDEV_LOCAL_BYTES "
		    "here gives %llu (every process of a node must have the same)", name,
		    (unsigned long long)atomic_load(&n->budget_pages),
		    (unsigned long long)budget_pages);
	return n;
}

void sd_node_wake_under(struct sd_node *n)
{
	atomic_fetch_add(&n->under, 1);
	if (atomic_load(&n->waiters))
		futex_wake(&n->under, INT_MAX);
}

void sd_node_add_local(struct sd_node *n, struct sd_node_slot *s, int64_t delta)
{
	atomic_fetch_add(&n->resident, (uint64_t)delta);
	atomic_fetch_add(&s->local, (uint64_t)delta);
	if (delta < 0)
		sd_node_wake_under(n);
}

int sd_node_alive(const struct sd_node_slot *s)
{
	int32_t pid = atomic_load(&s->pid), tid = atomic_load(&s->reclaim_tid);
	long r;

	if (pid <= 0)
		return 0;
	/* The reclaim thread, not the process: it is gone in a zombie (only the leader stays)
	 * and after an exec (only the exec'ing thread goes on). */
	r = tid ? syscall(SYS_tgkill, pid, tid, 0) : kill(pid, 0);
	return r == 0 || errno == EPERM;
}

void sd_node_reclaim(struct sd_node *n, struct sd_node_slot *s)
{
	int32_t pid = atomic_load(&s->pid);
	uint64_t local;

	if (pid <= 0 || !atomic_compare_exchange_strong(&s->pid, &pid, -1))
		return; /* free, or another process reclaims it */
	local = atomic_exchange(&s->local, 0);
	atomic_store(&s->unsettled, 0);
	atomic_fetch_sub(&n->resident, local);
	atomic_store(&s->oldest, SD_NODE_NO_PAGE);
	atomic_store(&s->reclaim_tid, 0);
	atomic_store(&s->done, atomic_load(&s->req));
	atomic_fetch_add(&n->reclaimed, 1);
	atomic_store(&s->pid, 0);
	sd_node_wake_under(n);
}

struct sd_node_slot *sd_node_take_slot(struct sd_node *n, int32_t pid)
{
	int i, pass;

	for (i = 0; i < SD_NODE_SLOTS; i++) /* a former image of this process (exec) */
		if (atomic_load(&n->slot[i].pid) == pid)
			sd_node_reclaim(n, &n->slot[i]);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < SD_NODE_SLOTS; i++) {
			struct sd_node_slot *s = &n->slot[i];
			int32_t free_pid = 0;

			if (!atomic_compare_exchange_strong(&s->pid, &free_pid, -1))
				continue;
			atomic_store(&s->reclaim_tid, 0);
			atomic_store(&s->done, atomic_load(&s->req));
			atomic_store(&s->out_pages, 0);
			atomic_store(&s->out_for_others, 0);
			atomic_store(&s->oldest, SD_NODE_NO_PAGE);
			atomic_store(&s->local, 0);
			atomic_store(&s->unsettled, 0);
			atomic_store(&s->pid, pid);
			return s;
		}
		for (i = 0; i < SD_NODE_SLOTS; i++) /* full: reclaim the slots of processes gone */
			if (atomic_load(&n->slot[i].pid) > 0 && !sd_node_alive(&n->slot[i]))
				sd_node_reclaim(n, &n->slot[i]);
	}
	return NULL;
}

uint64_t sd_node_settled(struct sd_node *n)
{
	uint64_t resident = atomic_load(&n->resident), unsettled = 0;
	int i;

	for (i = 0; i < SD_NODE_SLOTS; i++)
		unsettled += atomic_load(&n->slot[i].unsettled);
	return unsettled < resident ? resident - unsettled : 0;
}

uint64_t sd_node_held(struct sd_node *n)
{
	uint64_t resident = atomic_load(&n->resident), evicting = atomic_load(&n->shared_evicting);

	return evicting < resident ? resident - evicting : 0;
}

void sd_node_note_peak(struct sd_node *n)
{
	uint64_t now = atomic_load(&n->resident), peak = atomic_load(&n->peak);

	if (now > peak) /* less the pages a forked child has not made room for yet */
		now = sd_node_settled(n);
	while (now > peak && !atomic_compare_exchange_weak(&n->peak, &peak, now))
		;
}

void sd_node_add_shared(struct sd_node *n, int64_t d_resident, int64_t d_evicting)
{
	/* Evicting first when it grows, last when it shrinks: a reader never sees the held pages
	 * (resident less evicting) above what they are (it would evict more than needed). */
	if (d_evicting > 0)
		atomic_fetch_add(&n->shared_evicting, (uint64_t)d_evicting);
	atomic_fetch_add(&n->shared_resident, (uint64_t)d_resident);
	atomic_fetch_add(&n->resident, (uint64_t)d_resident);
	if (d_evicting < 0)
		atomic_fetch_add(&n->shared_evicting, (uint64_t)d_evicting);
	if (d_resident < 0 || d_evicting < 0)
		sd_node_wake_under(n);
}

void sd_node_release(struct sd_node *n, struct sd_node_slot *s)
{
	atomic_store(&s->unsettled, 0);
	atomic_fetch_sub(&n->resident, atomic_exchange(&s->local, 0));
	atomic_store(&s->oldest, SD_NODE_NO_PAGE);
	atomic_store(&s->reclaim_tid, 0);
	atomic_store(&s->pid, 0);
	sd_node_wake_under(n);
}

struct sd_node_slot *sd_node_oldest(struct sd_node *n, uint64_t now_ns, uint64_t stall_ns)
{
	struct sd_node_slot *best = NULL;
	uint64_t best_stamp = SD_NODE_NO_PAGE;
	int i;

	for (i = 0; i < SD_NODE_SLOTS; i++) {
		struct sd_node_slot *s = &n->slot[i];
		uint64_t stamp;

		if (atomic_load(&s->pid) <= 0 || !atomic_load(&s->local))
			continue;
		if (atomic_load(&s->req) != atomic_load(&s->done) &&
		    now_ns > atomic_load(&s->req_ns) + stall_ns)
			continue; /* stalled: its request has waited too long already */
		stamp = atomic_load(&s->oldest);
		if (!best || stamp < best_stamp) {
			best = s;
			best_stamp = stamp;
		}
	}
	return best;
}

int sd_node_request(struct sd_node_slot *s, uint64_t now_ns)
{
	uint32_t req = atomic_load(&s->req);

	if (req != atomic_load(&s->done))
		return 0;
	atomic_store(&s->req_ns, now_ns); /* before the request shows: never an old time */
	if (!atomic_compare_exchange_strong(&s->req, &req, req + 1))
		return 0;
	futex_wake(&s->req, 1);
	return 1;
}

void sd_node_wait_under(struct sd_node *n, uint32_t seen, uint64_t timeout_ns)
{
	atomic_fetch_add(&n->waiters, 1);
	futex_wait(&n->under, seen, timeout_ns);
	atomic_fetch_sub(&n->waiters, 1);
}

uint32_t sd_node_wait_request(struct sd_node_slot *s, uint64_t timeout_ns)
{
	uint32_t req = atomic_load(&s->req);

	if (req == atomic_load(&s->done)) {
		futex_wait(&s->req, req, timeout_ns);
		req = atomic_load(&s->req);
	}
	return req;
}

void sd_node_wake_slot(struct sd_node_slot *s)
{
	futex_wake(&s->req, INT_MAX);
}
