/*
 * User-space side shared by both backends: run configuration from SWAPDEV_* environment
 * variables, FCT table loading, the busy-wait, the rmem trace writer and the histogram dump.
 */
#ifndef SD_USER_H
#define SD_USER_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../core/sd_delay.h"

struct sd_run {
	struct sd_model model;        /* the configured core model (SWAPDEV_MODEL) */
	struct sd_delay_model delay;  /* what requests are timed by: the core model, or a
				       * backend's policy around it (uffd comex) */
	pthread_mutex_t mu;           /* serializes the model, the counters and the trace */
	struct sd_hist applied; /* measured busy-wait per request */
	struct sd_hist target;  /* what the model asked for */
	struct sd_hist minor;   /* uffd CLOCK: minor refaults (local, no delay), service time */
	int report_minor;       /* write the "minor" histogram too (uffd) */
	FILE *trace;            /* rmem trace (NULL: off) */
	char *trace_path;       /* as configured, "%p" replaced: messages name it */
	char *trace_tmp;        /* the temporary written (NULL: written through in place) */
	char *trace_dest;       /* the file trace_tmp is renamed onto (trace_path's symlinks
				 * followed) */
	char *hist_path;
	uint64_t batch_id;
	uint64_t reads, writes, read_pages, write_pages;
};

static inline uint64_t sd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t sd_realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Load the model and outputs from the environment:
 *   SWAPDEV_MODEL       a name of core/sd_models.def (default none)
 *   SWAPDEV_LATENCY_NS  fixed, link: per-request latency (ns)
 *   SWAPDEV_BANDWIDTH_BPS fixed, link: bandwidth in bit/s (0 or unset: none)
 *   SWAPDEV_FCT_FILE    fct-mean: "<bytes> <fct_us>" table (export-fct, artifact fcts_*.txt)
 *                       or "<pages> <fct_ns>" lines (/proc/rmem_cdf) with
 *                       SWAPDEV_FCT_FORMAT=pages-ns; fct-sample: "<bytes> <cum_prob> <fct_us>"
 *   SWAPDEV_SEED        fct-sample: PRNG seed (default 1)
 *   SWAPDEV_TRACE       write an rmem paging trace here (atomically, at exit)
 *   SWAPDEV_HIST        write the applied/target delay histograms here at exit
 * On error prints "swapdev: <file>:<line>: ..." to stderr and returns -1.
 */
int sd_run_init(struct sd_run *r);
/*
 * In a child forked from a process whose run is r (the uffd device across fork()): the
 * child's run starts empty. The parent's buffered trace lines are discarded (the parent
 * writes them), the counters and histograms restart at zero, the lock is new; the child
 * writes a trace of its own only if SWAPDEV_TRACE has "%p" (a fixed path names the
 * parent's trace), at its path directly (not renamed at the end: a forked worker is often
 * killed by a signal, and sd_run_flush keeps what it wrote on disk), and no histogram
 * file (SWAPDEV_HIST is the parent's). The model (its table, its random state) is the
 * parent's as of the fork. Returns -1 if the trace cannot be opened (message on stderr).
 */
int sd_run_forked_child(struct sd_run *r);
/* Write the trace's buffered lines out now (the uffd handler of a forked child, idle). */
void sd_run_flush(struct sd_run *r);
/* The delay (ns) of req under the run's delay model (r->delay; calls serialized). */
uint64_t sd_run_model_delay(struct sd_run *r, const struct sd_req *req);
/* Busy-wait until the request that started at start_ns has taken delay_ns; record it. */
void sd_run_delay(struct sd_run *r, uint64_t start_ns, uint64_t delay_ns);
/* Time req by the run's model from its arrival (req->now_ns) and busy-wait until then;
 * returns the model's delay (ns). Safe to call from several threads at once: the model is
 * asked under r->mu, the waits overlap. */
uint64_t sd_run_serve(struct sd_run *r, const struct sd_req *req);
/* Log one remote access (is_read: swap-in) of the current batch and count it. */
void sd_run_log(struct sd_run *r, int is_read, uint64_t start_page, uint64_t npages);
/* Close the current batch (the next sd_run_log starts batch_id + 1). */
void sd_run_end_batch(struct sd_run *r);
/* Log req as a batch of its own (one line of the rmem trace), atomically. */
void sd_run_log_request(struct sd_run *r, const struct sd_req *req);
/* Flush and install the trace and histogram files; print a summary to stderr (with the
 * minor refaults if report_minor). */
int sd_run_finish(struct sd_run *r, const char *who);
/* Parse an unsigned integer environment variable (default if unset); -1 on bad value. */
int sd_env_u64(const char *name, uint64_t dflt, uint64_t *out);

#endif
