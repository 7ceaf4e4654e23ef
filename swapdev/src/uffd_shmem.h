/*
 * The uffd backend's shared anonymous memory (uffd_shmem.c): MAP_SHARED | MAP_ANONYMOUS
 * mappings (shmem) registered in MINOR mode, one budget per region shared by every
 * process that maps it. uffd_preload.c calls the hooks below, all under its lock (the
 * one passed to uffd_shmem_init); the module calls back the uffd_shared_* functions
 * (uffd_preload.c) under that lock.
 */
#ifndef SD_UFFD_SHMEM_H
#define SD_UFFD_SHMEM_H

#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sd_node;

/* Parse SWAPDEV_SHARED_LOCAL_FRACTION (unset or empty: shared mappings are not registered,
 * every hook below is a no-op) and SWAPDEV_EVICT_BATCH; -1 after printing an error. */
int uffd_shmem_init(pthread_mutex_t *lock);
/* The process is on a node (SWAPDEV_NODE_SHM, uffd_node.h): every region it registers from
 * now on is charged to the node's one budget (its pages in the node's count once, stamped by
 * the node's clock) instead of having a budget of its own. Before any region is registered. */
void uffd_shmem_set_node(struct sd_node *n);
/* Under the lock: the stamp of the oldest resident page (the FIFO head) over this process's
 * regions on the node, and which region it is (*which); SD_NODE_NO_PAGE if none holds one. */
uint64_t uffd_shmem_oldest(int *which);
/* Under the lock: send one eviction batch of region `which`'s oldest pages remote (the
 * node chose it); returns the pages chosen (0: none could be). */
unsigned uffd_shmem_evict(int which);
/* Under the lock, while a fault waits for the node: apply the regions' eviction logs (this
 * process acknowledges the others' evictions) and complete the overdue ones. */
void uffd_shmem_settle(void);
/* The UFFDIO_API features the module needs (0 if off). */
uint64_t uffd_shmem_features(void);
/* 1 if mmap(len, prot, flags) makes a mapping the module registers. */
int uffd_shmem_wants(size_t len, int prot, int flags, uint64_t min_map_bytes);
/* A new shared anonymous mapping [start, start+len): register it on uffd (MINOR + MISSING). */
void uffd_shmem_register(int uffd, uintptr_t start, size_t len);
/* [addr, addr+len) is about to be unmapped or moved: every region it touches leaves this
 * process's device (its pages keep their data: they are the mapping's own). */
void uffd_shmem_release(int uffd, uintptr_t addr, size_t len);
/* Serve m if it is a fault in a shared region: 1 if served, 0 if not the module's. */
int uffd_shmem_fault(int uffd, const struct uffd_msg *m);
/* Without the lock, from the handler's loop: apply the shared regions' eviction logs if
 * another process has added to them (takes the lock then); one load per region if not. */
void uffd_shmem_poll(void);
/* In a forked child, on its new userfaultfd: register the regions again, same state. */
void uffd_shmem_forked_child(int uffd);
/* The device stops (its descriptor is being closed): forget every region. */
void uffd_shmem_stop(void);
/* At exit: print one line per region to f ("swapdev uffd shmem: ...") and leave the
 * regions (unregistered from uffd). */
void uffd_shmem_finish(int uffd, FILE *f);

/* Callbacks, uffd_preload.c, under the lock: the paging policy's fetch of device page g;
 * write-back of g..g+n-1 (the end of an eviction batch: uffd_end_evict, uffd_space.h). */
void uffd_shared_fetch(uint64_t g);
void uffd_shared_write(uint64_t g, uint64_t n);
/* On a node, under the lock, never under a region's mutex: room in the node's budget
 * before a fault makes a shared page resident; the node's peak after it did. */
void uffd_shared_make_room(void);
void uffd_shared_note_peak(void);
/* Start a thread of the device with every signal blocked (an application's handlers must
 * run on its own threads: PostgreSQL's postmaster forks from its SIGCHLD handler). */
int uffd_thread_start(pthread_t *t, void *(*fn)(void *));

#endif
