#define _GNU_SOURCE
#include "sd_user.h"

#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const err_text[] = {
	"ok",
	"not a number of the expected form (digits, optional '.' fraction; no sign or exponent)",
	"wrong number of fields",
	"value out of range",
	"out of order (sizes must not decrease; within a size cum_prob must increase and fct_us not decrease)",
	"point storage full",
	"incomplete (a size's CDF must end at cum_prob 1)",
};

static const char *sd_strerror(int rc)
{
	return rc <= 0 && rc >= -6 ? err_text[-rc] : "error";
}

int sd_env_u64(const char *name, uint64_t dflt, uint64_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-') {
		fprintf(stderr, "swapdev: %s=%s: expected an unsigned integer\n", name, v);
		return -1;
	}
	*out = x;
	return 0;
}

static int load_table(struct sd_run *r, const char *path, int fmt)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0, skipped = 0;
	int rc = 0, field;
	static const char *const expect[] = {"<bytes> <fct_us>", "<pages> <fct_ns>",
					     "<bytes> <cum_prob> <fct_us>"};

	if (!f) {
		fprintf(stderr, "swapdev: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fmt == SD_FMT_DIST) {
		uint32_t lines = 0;
		struct sd_fct_point *pts;

		while ((n = getline(&line, &cap, f)) >= 0)
			lines++;
		rewind(f);
		pts = calloc(lines ? lines : 1, sizeof(*pts));
		if (!pts) {
			fclose(f);
			return -1;
		}
		sd_model_set_points(&r->model, pts, lines);
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		struct sd_line l;

		lineno++;
		rc = sd_parse_line(line, (sd_u64)n, fmt, &l, &field);
		if (rc) {
			fprintf(stderr, "swapdev: %s:%lu: field %d: %s; expected '%s', got '%.*s'\n",
				path, lineno, field, sd_strerror(rc), expect[fmt],
				(int)strcspn(line, "\r\n"), line);
			break;
		}
		rc = sd_model_add(&r->model, fmt, &l);
		if (rc == SD_ERR_SKIPPED) {
			skipped++;
			rc = 0;
		} else if (rc) {
			fprintf(stderr, "swapdev: %s:%lu: %s ('%.*s')\n", path, lineno,
				sd_strerror(rc), (int)strcspn(line, "\r\n"), line);
			break;
		}
	}
	free(line);
	fclose(f);
	if (rc)
		return -1;
	if (sd_model_finalize(&r->model)) {
		fprintf(stderr, "swapdev: %s: %s\n", path,
			fmt == SD_FMT_DIST ? sd_strerror(SD_ERR_INCOMPLETE)
					   : "no entry of 1..4095 pages (rmem.c FCT_MAX_SIZE)");
		return -1;
	}
	if (skipped)
		fprintf(stderr,
			"swapdev: %s: %lu lines outside 1..4095 pages ignored (as rmem.c cdf_write)\n",
			path, skipped);
	return 0;
}

/* 1 if path exists (symlinks followed) and is neither a regular file nor a directory. */
static int is_special_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/*
 * The outputs (SWAPDEV_TRACE, SWAPDEV_HIST) follow one rule, disaggsim/atomic.py's. A target
 * that exists and is neither a regular file nor a directory (a device such as /dev/null, a
 * FIFO; symlinks followed) is written through in place: renaming onto it would replace the
 * node with a regular file. Anything else is written to "<file>.tmp.<pid>" and renamed onto
 * <file>, the target with its symlinks followed: a symlink stays a symlink and the file it
 * names gets the content, as a FIFO behind a symlink does (a dangling symlink is replaced).
 * On failure the temporary is removed and one line names the target as configured.
 * One difference from atomic.py: a missing parent directory is not created here but fails
 * (ENOENT, one line): the device runs inside the application's processes, where creating
 * directories would be a surprise (tests/test_swapdev_outputs.py "missing-parent").
 */

/* Plan the output at path: *tmp NULL (write path through in place), or the temporary to
 * write and *dest the file to rename it onto. -1: out of memory. */
static int out_plan(const char *path, char **dest, char **tmp)
{
	struct stat st;

	*dest = *tmp = NULL;
	if (is_special_file(path))
		return 0;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		*dest = realpath(path, NULL); /* NULL if dangling */
	if (!*dest)
		*dest = strdup(path);
	if (!*dest || asprintf(tmp, "%s.tmp.%d", *dest, (int)getpid()) < 0) {
		free(*dest);
		*dest = *tmp = NULL;
		return -1;
	}
	return 0;
}

/* Open the output planned at path (tmp: out_plan's) for writing; NULL after a message. */
static FILE *out_open(const char *path, const char *tmp)
{
	FILE *f;

	/* A temporary of this pid is an earlier image's that exec'd this one (it never reaches
	 * its rename): a launcher's, maybe another user's (setpriv as root, then the server as
	 * postgres, whose fopen of root's file failed). */
	if (tmp)
		unlink(tmp);
	f = fopen(tmp ? tmp : path, "w");
	if (!f)
		fprintf(stderr, "swapdev: %s: %s\n", path, strerror(errno));
	return f;
}

/* Close f (write_failed: a write to it failed, errno says why) and rename tmp onto dest
 * (unless written through); on any failure one message naming path, tmp removed, -1. */
static int out_install(FILE *f, int write_failed, const char *path, const char *dest,
		       const char *tmp)
{
	int err = write_failed ? (errno ? errno : EIO) : 0;

	if (fclose(f) && !err)
		err = errno;
	if (!err && tmp && rename(tmp, dest))
		err = errno;
	if (!err)
		return 0;
	fprintf(stderr, "swapdev: %s: %s\n", path, strerror(err));
	if (tmp)
		unlink(tmp);
	return -1;
}

/* Open the rmem trace at tp ("%p": this process's pid) by the outputs' rule, or (in_place)
 * at its own path. */
static int open_trace(struct sd_run *r, const char *tp, int in_place)
{
	/* "%p" in the path stands for the pid (as in core_pattern): the processes that inherit
	 * one environment (a JVM's children, a forked worker) write one trace each. */
	const char *pp = strstr(tp, "%p");

	if (pp) {
		if (asprintf(&r->trace_path, "%.*s%d%s", (int)(pp - tp), tp, (int)getpid(),
			     pp + 2) < 0)
			return -1;
	} else if (!(r->trace_path = strdup(tp))) {
		return -1;
	}
	if (!in_place && out_plan(r->trace_path, &r->trace_dest, &r->trace_tmp))
		return -1;
	r->trace = out_open(r->trace_path, r->trace_tmp);
	if (!r->trace)
		return -1;
	setvbuf(r->trace, NULL, _IOFBF, 1 << 20);
	return 0;
}

int sd_run_init(struct sd_run *r)
{
	const char *kind = getenv("SWAPDEV_MODEL");
	const char *fct = getenv("SWAPDEV_FCT_FILE");
	const char *ffmt = getenv("SWAPDEV_FCT_FORMAT");
	const char *tp = getenv("SWAPDEV_TRACE");
	const char *hp = getenv("SWAPDEV_HIST");
	uint64_t lat, bw, seed;
	int k;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	k = kind && *kind ? sd_model_kind_of(kind, strlen(kind)) : SD_MODEL_NONE;
	if (k < 0) {
		fprintf(stderr, "swapdev: SWAPDEV_MODEL=%s: expected one of", kind);
		for (k = 0; k < SD_MODEL_COUNT; k++)
			fprintf(stderr, " %s", sd_model_table[k].name);
		fputc('\n', stderr);
		return -1;
	}
	sd_model_init(&r->model, k);
	r->delay = sd_model_interface(&r->model);
	sd_hist_init(&r->applied);
	sd_hist_init(&r->target);
	sd_hist_init(&r->minor);
	if (sd_env_u64("SWAPDEV_LATENCY_NS", 0, &lat) || sd_env_u64("SWAPDEV_BANDWIDTH_BPS", 0, &bw) ||
	    sd_env_u64("SWAPDEV_SEED", 1, &seed))
		return -1;
	sd_model_set_fixed(&r->model, lat, bw);
	sd_model_seed(&r->model, seed);
	if (sd_model_table[k].params == SD_PARAMS_TABLE) {
		int fmt = SD_FMT_DIST;

		if (!fct || !*fct) {
			fprintf(stderr, "swapdev: SWAPDEV_MODEL=%s needs SWAPDEV_FCT_FILE\n", kind);
			return -1;
		}
		if (k == SD_MODEL_FCT_MEAN) {
			if (!ffmt || !*ffmt || !strcmp(ffmt, "bytes-us"))
				fmt = SD_FMT_BYTES_US;
			else if (!strcmp(ffmt, "pages-ns"))
				fmt = SD_FMT_PAGES_NS;
			else {
				fprintf(stderr,
					"swapdev: SWAPDEV_FCT_FORMAT=%s: expected bytes-us or pages-ns\n",
					ffmt);
				return -1;
			}
		}
		if (load_table(r, fct, fmt))
			return -1;
	}
	if (tp && *tp && open_trace(r, tp, 0))
		return -1;
	if (hp && *hp)
		r->hist_path = strdup(hp);
	return 0;
}

int sd_run_forked_child(struct sd_run *r)
{
	const char *tp = getenv("SWAPDEV_TRACE");

	pthread_mutex_init(&r->mu, NULL); /* another thread of the parent may have held it */
	if (r->trace) {
		__fpurge(r->trace); /* the parent's buffered lines: the parent writes them */
		fclose(r->trace);
	}
	r->trace = NULL;
	r->trace_path = r->trace_tmp = r->trace_dest = NULL; /* the parent's (its copies) */
	r->hist_path = NULL;
	r->reads = r->writes = r->read_pages = r->write_pages = 0;
	sd_hist_init(&r->applied);
	sd_hist_init(&r->target);
	sd_hist_init(&r->minor);
	if (tp && strstr(tp, "%p"))
		return open_trace(r, tp, 1);
	return 0;
}

void sd_run_flush(struct sd_run *r)
{
	pthread_mutex_lock(&r->mu);
	if (r->trace)
		fflush(r->trace);
	pthread_mutex_unlock(&r->mu);
}

uint64_t sd_run_model_delay(struct sd_run *r, const struct sd_req *req)
{
	uint64_t ns;

	pthread_mutex_lock(&r->mu);
	ns = sd_delay(&r->delay, req);
	pthread_mutex_unlock(&r->mu);
	return ns;
}

void sd_run_delay(struct sd_run *r, uint64_t start_ns, uint64_t delay_ns)
{
	uint64_t now = sd_now_ns();

	if (delay_ns) {
		uint64_t end = start_ns + delay_ns;

		while (now < end)
			now = sd_now_ns();
	}
	pthread_mutex_lock(&r->mu);
	sd_hist_add(&r->target, delay_ns);
	sd_hist_add(&r->applied, now - start_ns);
	pthread_mutex_unlock(&r->mu);
}

uint64_t sd_run_serve(struct sd_run *r, const struct sd_req *req)
{
	uint64_t ns = sd_run_model_delay(r, req);

	sd_run_delay(r, req->now_ns, ns);
	return ns;
}

static void log_locked(struct sd_run *r, int is_read, uint64_t start_page, uint64_t npages)
{
	char buf[128];
	sd_u64 n;

	if (is_read) {
		r->reads++;
		r->read_pages += npages;
	} else {
		r->writes++;
		r->write_pages += npages;
	}
	if (!r->trace)
		return;
	n = sd_rmem_format(buf, sizeof(buf), r->batch_id, sd_realtime_us(), is_read, start_page,
			   npages);
	fwrite(buf, 1, n, r->trace);
}

void sd_run_log(struct sd_run *r, int is_read, uint64_t start_page, uint64_t npages)
{
	pthread_mutex_lock(&r->mu);
	log_locked(r, is_read, start_page, npages);
	pthread_mutex_unlock(&r->mu);
}

void sd_run_end_batch(struct sd_run *r)
{
	pthread_mutex_lock(&r->mu);
	r->batch_id++;
	pthread_mutex_unlock(&r->mu);
}

void sd_run_log_request(struct sd_run *r, const struct sd_req *req)
{
	pthread_mutex_lock(&r->mu);
	log_locked(r, req->op == SD_OP_READ, req->first_page, req->npages);
	r->batch_id++;
	pthread_mutex_unlock(&r->mu);
}

static int write_hist(FILE *f, const char *name, const struct sd_hist *h)
{
	uint32_t i;

	fprintf(f, "# %s n=%llu sum_ns=%llu min_ns=%llu max_ns=%llu\n", name,
		(unsigned long long)h->n, (unsigned long long)h->sum_ns,
		(unsigned long long)(h->n ? h->min_ns : 0), (unsigned long long)h->max_ns);
	for (i = 0; i < SD_HIST_BUCKETS; i++)
		if (h->counts[i])
			fprintf(f, "%s %llu %llu %llu\n", name, (unsigned long long)sd_hist_lower(i),
				(unsigned long long)sd_hist_upper(i),
				(unsigned long long)h->counts[i]);
	return ferror(f);
}

int sd_run_finish(struct sd_run *r, const char *who)
{
	int rc = 0;

	if (r->trace) {
		/* ferror: a buffer flushed during the run was lost; the trace is not whole */
		if (out_install(r->trace, ferror(r->trace), r->trace_path, r->trace_dest,
				r->trace_tmp))
			rc = -1;
		r->trace = NULL;
	}
	if (r->hist_path) {
		char *dest, *tmp;
		FILE *f;
		int bad;

		if (out_plan(r->hist_path, &dest, &tmp))
			return -1;
		f = out_open(r->hist_path, tmp);
		if (!f) {
			rc = -1;
		} else {
			errno = 0;
			bad = write_hist(f, "applied", &r->applied) ||
			      write_hist(f, "target", &r->target) ||
			      (r->report_minor && write_hist(f, "minor", &r->minor));
			if (out_install(f, bad, r->hist_path, dest, tmp))
				rc = -1;
		}
		free(dest);
		free(tmp);
	}
	if (r->reads + r->writes + r->minor.n == 0)
		return rc; /* a process that never paged (a helper of the real application) */
	fprintf(stderr,
		"swapdev %s: %llu swap-ins (%llu pages), %llu swap-outs (%llu pages), "
		"mean applied delay %llu ns",
		who, (unsigned long long)r->reads, (unsigned long long)r->read_pages,
		(unsigned long long)r->writes, (unsigned long long)r->write_pages,
		(unsigned long long)(r->applied.n ? r->applied.sum_ns / r->applied.n : 0));
	if (r->report_minor)
		fprintf(stderr, ", %llu minor refaults (local, no delay; mean %llu ns)",
			(unsigned long long)r->minor.n,
			(unsigned long long)(r->minor.n ? r->minor.sum_ns / r->minor.n : 0));
	fputc('\n', stderr);
	return rc;
}
