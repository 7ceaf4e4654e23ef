/*
 * swapdev delay core: the latency models of the latency-injection remote-memory device,
 * FCT table parsing, the histogram of applied delays and the rmem trace line writer.
 *
 * Plain C99 with no libc beyond what a Linux kernel module also has: no malloc (all storage
 * is owned by the caller), no floating point, no stdio; integer nanoseconds throughout. A
 * kernel block driver can compile this file as is (build with -D__KERNEL__; 64-bit
 * division is plain '/', so x86_64 only, as the original artifact).
 *
 * A model is an interface: its operations (struct sd_model_ops, a table of function
 * pointers) and its state (a pointer), asked for the delay of one request (struct sd_req:
 * the operation, the page range, the bytes and the arrival time). The names of the core's
 * models are listed once, in sd_models.def. A backend may wrap a model in a policy with
 * state of its own (the uffd backend's comex policy, src/policy_comex.c).
 *
 * Models:
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
 *   link        fixed over one shared link served in arrival order: a request's transfer
 *               (size_bytes * 8 * 1e9 / bandwidth_bps) starts when the link frees, at
 *               max(now_ns, the previous transfer's end), and it completes latency_ns after
 *               its transfer ends; the delay is completion - now_ns. The "link busy until"
 *               clock is the model's state (issue #23; a FIFO queue in front of one link,
 *               as a store-and-forward NIC port serializes frames).
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

/* SD_MODEL_NONE, SD_MODEL_FIXED, ... in the order of sd_models.def; SD_MODEL_COUNT. */
enum sd_model_kind {
#define SD_MODEL(e, name, params, what) SD_MODEL_##e,
#include "sd_models.def"
#undef SD_MODEL
	SD_MODEL_COUNT
};

/* A request to the remote memory: what a model is asked for a delay of. */
enum sd_op {
	SD_OP_READ = 0,  /* swap-in, fetch: data comes from remote memory */
	SD_OP_WRITE = 1, /* swap-out, write-back: data goes to remote memory */
};
struct sd_req {
	int op;            /* enum sd_op */
	sd_u64 first_page; /* first page in the device's page space (4 KiB pages) */
	sd_u64 npages;     /* pages covered (at least 1 for a non-empty request) */
	sd_u64 size_bytes; /* bytes moved: npages * 4096, or a block request's sector bytes */
	sd_u64 now_ns;     /* arrival time on the caller's monotonic clock (ns) */
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
	/* link: the shared link is busy until this time (ns, the requests' clock) */
	sd_u64 link_free_ns;
};

/*
 * A model's operations. delay_ns returns the delay (ns) of req under the model whose
 * state is st, and may update that state (a PRNG, a link clock, buffers). Calls on one
 * state must be serialized by the caller.
 */
/* What configures a model (sd_models.def PARAMS). */
enum sd_params {
	SD_PARAMS_NONE = 0,
	SD_PARAMS_RATE = 1,  /* latency_ns, bandwidth_bps */
	SD_PARAMS_TABLE = 2, /* an FCT table */
};
struct sd_model_ops {
	const char *name;
	int params; /* enum sd_params */
	sd_u64 (*delay_ns)(void *st, const struct sd_req *req);
};

/* A model instance: the interface a backend calls. */
struct sd_delay_model {
	const struct sd_model_ops *ops;
	void *state;
};

static inline sd_u64 sd_delay(const struct sd_delay_model *dm, const struct sd_req *req)
{
	return dm->ops->delay_ns(dm->state, req);
}

/* The core's models, indexed by enum sd_model_kind (names from sd_models.def). Their state
 * is a struct sd_model. */
extern const struct sd_model_ops sd_model_table[SD_MODEL_COUNT];
/* The kind named name[0..len) (no NUL needed), or -1. */
int sd_model_kind_of(const char *name, sd_u64 len);
/* The core model m as an interface (its kind's operations, m as state). */
struct sd_delay_model sd_model_interface(struct sd_model *m);
/* The delay of req under m's current kind (0 for an unknown kind). */
sd_u64 sd_model_delay(struct sd_model *m, const struct sd_req *req);
/* A request of op for size_bytes starting at byte offset pos_bytes, arriving at now_ns. */
struct sd_req sd_req_bytes(int op, sd_u64 pos_bytes, sd_u64 size_bytes, sd_u64 now_ns);
/* A request of op for npages whole pages from first_page, arriving at now_ns. */
struct sd_req sd_req_pages(int op, sd_u64 first_page, sd_u64 npages, sd_u64 now_ns);

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

/* Components, exposed for tests. */
sd_u64 sd_fixed_ns(const struct sd_model *m, sd_u64 size_bytes);
sd_u64 sd_fct_mean_ns(const struct sd_model *m, sd_u64 size_bytes);
sd_u64 sd_fct_sample_ns(const struct sd_model *m, sd_u64 size_bytes, sd_u32 u_ppb);
sd_u64 sd_link_ns(struct sd_model *m, sd_u64 size_bytes, sd_u64 now_ns);
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
