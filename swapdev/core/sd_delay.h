/*
 * swapdev delay core: the latency models of the latency-injection remote-memory device,
 * FCT table parsing, the histogram of applied delays and the rmem trace line writer.
 *
 * Plain C99 with no libc beyond what a Linux kernel module also has: no malloc (all storage
 * is owned by the caller), no floating point, no stdio; integer nanoseconds throughout. A
 * kernel block driver can compile this file as is (build with -D__KERNEL__; 64-bit
 * division is plain '/', so x86_64 only, as the original artifact).
 *
 * Models (one per run):
 *   none        no delay.
 *   fixed       latency_ns + size_bytes * 8 * 1e9 / bandwidth_bps per request: the paper's
 *               §3.1 "artificial delays to emulate network round-trip latency and bandwidth
 *               for each paging operation"; the formula is rmem.c's
 *               ((npage*PAGE_SIZE*8ULL)*1000000000)/bandwidth_bps plus its latency_ns spin
 *               (NetSys/disaggregation, rmem/rmem.c).
 *   fct-mean    the FCT of the largest listed size <= the request size, 0 below the
 *               smallest: rmem.c get_fct() over fct_by_size[pages] (FCT_MAX_SIZE 4096
 *               pages; index clamped to 4095; an entry of 0 means "none").
 *   fct-sample  an FCT drawn from the empirical distribution (CDF points) of simulated FCTs
 *               for the largest listed size <= the request size.
 */
#ifndef SD_DELAY_H
#define SD_DELAY_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef u64 sd_u64;
typedef u32 sd_u32;
typedef s64 sd_s64;
#else
#include <stddef.h>
#include <stdint.h>
typedef uint64_t sd_u64;
typedef uint32_t sd_u32;
typedef int64_t sd_s64;
#endif

#define SD_PAGE_BYTES 4096u
/* rmem.c FCT_MAX_SIZE: the fct-mean table is indexed by pages 1..4095. */
#define SD_FCT_MAX_PAGES 4096u
/* Cumulative probabilities are integers in parts per billion. */
#define SD_PPB 1000000000u

enum sd_model_kind {
	SD_MODEL_NONE = 0,
	SD_MODEL_FIXED = 1,
	SD_MODEL_FCT_MEAN = 2,
	SD_MODEL_FCT_SAMPLE = 3,
};

/* Table line formats. */
enum sd_table_format {
	SD_FMT_BYTES_US = 0, /* "<bytes> <fct_us>": disaggsim export-fct, artifact fcts_*.txt */
	SD_FMT_PAGES_NS = 1, /* "<pages> <fct_ns>": the artifact's /proc/rmem_cdf lines      */
	SD_FMT_DIST = 2,     /* "<bytes> <cum_prob> <fct_us>": export-fct --distribution      */
};

enum sd_err {
	SD_OK = 0,
	SD_ERR_SYNTAX = -1,   /* a field is not a number of the expected form */
	SD_ERR_FIELDS = -2,   /* wrong number of fields */
	SD_ERR_RANGE = -3,    /* a value out of range (overflow, probability > 1, size 0) */
	SD_ERR_ORDER = -4,    /* distribution points out of order */
	SD_ERR_FULL = -5,     /* the caller's point storage is full */
	SD_ERR_INCOMPLETE = -6, /* a size's CDF does not end at 1, or no entry at all */
	SD_ERR_SKIPPED = 1,   /* fct-mean: size outside rmem.c's 1..4095 pages, ignored (as rmem.c) */
};

/* One point of an empirical FCT CDF: P(FCT <= fct_ns | size_bytes) = cum_ppb / 1e9. */
struct sd_fct_point {
	sd_u64 size_bytes;
	sd_u64 fct_ns;
	sd_u32 cum_ppb;
};

struct sd_model {
	int kind;
	/* fixed */
	sd_u64 latency_ns;
	sd_u64 bandwidth_bps; /* 0: no transmission term */
	/* fct-mean: rmem.c fct_by_size[] */
	sd_u64 fct_by_pages[SD_FCT_MAX_PAGES];
	sd_u32 mean_entries;
	/* fct-sample: caller-owned storage, sorted by (size_bytes, cum_ppb) */
	struct sd_fct_point *points;
	sd_u32 npoints;
	sd_u32 cap_points;
	sd_u64 rng_state;
};

/* One parsed table line. */
struct sd_line {
	sd_u64 size;   /* bytes (BYTES_US, DIST) or pages (PAGES_NS) */
	sd_u64 fct_ns; /* truncated to whole ns, as the artifact's int(float(us) * 1000) */
	sd_u32 cum_ppb; /* DIST only */
	int empty;      /* blank line */
};

void sd_model_init(struct sd_model *m, int kind);
void sd_model_set_fixed(struct sd_model *m, sd_u64 latency_ns, sd_u64 bandwidth_bps);
void sd_model_set_points(struct sd_model *m, struct sd_fct_point *storage, sd_u32 cap);
void sd_model_seed(struct sd_model *m, sd_u64 seed);

/*
 * Parse one line (not NUL-terminated; len bytes; a trailing '\n' or '\r' is ignored).
 * Returns SD_OK or a negative sd_err; *field is set to the 1-based field at fault.
 */
int sd_parse_line(const char *line, sd_u64 len, int fmt, struct sd_line *out, int *field);

/* Add a parsed line to the model (fct-mean for BYTES_US/PAGES_NS, fct-sample for DIST). */
int sd_model_add(struct sd_model *m, int fmt, const struct sd_line *l);
/* Check the model is complete (each CDF ends at 1e9 ppb; some entry exists). */
int sd_model_finalize(const struct sd_model *m);

/* The delay in ns of one remote access of size_bytes under the model. */
sd_u64 sd_delay_ns(struct sd_model *m, sd_u64 size_bytes);
/* Components, exposed for tests. */
sd_u64 sd_fixed_ns(const struct sd_model *m, sd_u64 size_bytes);
sd_u64 sd_fct_mean_ns(const struct sd_model *m, sd_u64 size_bytes);
sd_u64 sd_fct_sample_ns(const struct sd_model *m, sd_u64 size_bytes, sd_u32 u_ppb);
sd_u64 sd_rng_next(sd_u64 *state);

/* Histogram of applied delays: exact below 128 ns, then 64 sub-buckets per power of two
 * (bucket width <= 1/64 of its lower bound: 1.6%). */
#define SD_HIST_SUB_BITS 6
#define SD_HIST_EXACT 128u
#define SD_HIST_BUCKETS (SD_HIST_EXACT + (64 - 7) * 64)
struct sd_hist {
	sd_u64 counts[SD_HIST_BUCKETS];
	sd_u64 n;
	sd_u64 sum_ns;
	sd_u64 min_ns;
	sd_u64 max_ns;
};
void sd_hist_init(struct sd_hist *h);
void sd_hist_add(struct sd_hist *h, sd_u64 ns);
sd_u32 sd_hist_index(sd_u64 ns);
sd_u64 sd_hist_lower(sd_u32 idx);
sd_u64 sd_hist_upper(sd_u32 idx); /* exclusive */

/*
 * Format one rmem paging-trace line, "<batch_id> <timestamp_us> <±start_page> <npages>\n"
 * ('-' swap-in/read, no sign swap-out/write; a read of page 0 is "-0"), the batch form read
 * by traces/paging.py read_rmem. Returns the length written, or 0 if cap is too small.
 */
sd_u64 sd_rmem_format(char *buf, sd_u64 cap, sd_u64 batch_id, sd_u64 time_us, int is_read,
		      sd_u64 start_page, sd_u64 npages);
/* Decimal form of v into buf (no NUL); returns length (<= 20). */
sd_u64 sd_u64_to_dec(char *buf, sd_u64 v);

#endif
