/*
 * swapdev swap backend: a FUSE (libfuse3 low-level API) daemon serving one RAM-backed file,
 * MOUNTPOINT/dev.img, of SWAPDEV_SIZE_BYTES (default 1 GiB). A loop device with direct I/O
 * on that file is the swap device (`losetup --direct-io=on`; swapon on a FUSE file itself
 * fails: FUSE has no swap_activate). This is the paper's §3.1 "special swap device backed
 * by physical memory" with a delay injected per request: every read (swap-in) and write
 * (swap-out) is busy-waited, from its arrival, to the delay model's value for its size,
 * like rmem.c's sched_clock() spin (NetSys/disaggregation rmem/rmem.c). Each request is one
 * batch of the rmem trace. SWAPDEV_QUEUE_DEPTH (default 1) requests are served at once:
 * 1 is the single-threaded loop, one at a time, as rmem.c serializes on its rx/tx locks;
 * more is libfuse's multi-threaded loop with that many worker threads, whose waits overlap
 * (each request is timed by the model, asked under one lock, from its own arrival; the
 * "link" model then queues their transfers on one shared link, core/sd_delay.h).
 *
 * The daemon mlockall()s (so it never waits on the swap it serves) and must run outside
 * the memory-limited cgroup. SIGTERM/SIGINT unmount and write the trace and histogram.
 *
 *   SWAPDEV_SIZE_BYTES=... SWAPDEV_MODEL=... swapdev-fuse MOUNTPOINT
 * (other SWAPDEV_* variables: src/sd_user.h)
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_user.h"

#define DEV_NAME "dev.img"
#define DEV_INO 2

static char *store;
static uint64_t store_bytes;
static struct sd_run run;
static uint64_t queue_depth;

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)store_bytes;
		st->st_blocks = (blkcnt_t)(store_bytes / 512);
		st->st_blksize = 4096;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, DEV_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DEV_INO;
	e.attr_timeout = 3600.0;
	e.entry_timeout = 3600.0;
	fill_attr(DEV_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != DEV_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600.0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)attr;
	if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != store_bytes) {
		fuse_reply_err(req, EPERM); /* the device has a fixed size */
		return;
	}
	op_getattr(req, ino, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DEV_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1; /* no page cache between the loop device and the store */
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static int in_range(fuse_req_t req, size_t size, off_t off)
{
	if (off < 0 || (uint64_t)off > store_bytes || size > store_bytes - (uint64_t)off) {
		fuse_reply_err(req, EINVAL);
		return 0;
	}
	return 1;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sd_req r = sd_req_bytes(SD_OP_READ, (uint64_t)off, size, sd_now_ns());

	(void)ino;
	(void)fi;
	if (!in_range(req, size, off))
		return;
	sd_run_serve(&run, &r);
	sd_run_log_request(&run, &r);
	fuse_reply_buf(req, store + off, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct sd_req r = sd_req_bytes(SD_OP_WRITE, (uint64_t)off, size, sd_now_ns());

	(void)ino;
	(void)fi;
	if (!in_range(req, size, off))
		return;
	memcpy(store + off, buf, size);
	sd_run_serve(&run, &r);
	sd_run_log_request(&run, &r);
	fuse_reply_write(req, size);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	op_ok(req, ino, fi);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_ok,
	.release = op_ok,
	.fsync = op_fsync,
};

int main(int argc, char **argv)
{
	char *fargv[] = {argv[0], NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct fuse_session *se;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: SWAPDEV_SIZE_BYTES=N [SWAPDEV_*=...] %s MOUNTPOINT\n",
			argv[0]);
		return 2;
	}
	if (sd_env_u64("SWAPDEV_SIZE_BYTES", 1ull << 30, &store_bytes) ||
	    sd_env_u64("SWAPDEV_QUEUE_DEPTH", 1, &queue_depth) || sd_run_init(&run))
		return 2;
	if (queue_depth == 0 || queue_depth > 256) {
		fprintf(stderr, "swapdev-fuse: SWAPDEV_QUEUE_DEPTH=%llu: expected 1..256\n",
			(unsigned long long)queue_depth);
		return 2;
	}
	if (store_bytes == 0 || store_bytes % 4096) {
		fprintf(stderr, "swapdev-fuse: SWAPDEV_SIZE_BYTES=%llu: expected a multiple of 4096\n",
			(unsigned long long)store_bytes);
		return 2;
	}
	store = mmap(NULL, store_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (store == MAP_FAILED) {
		perror("swapdev-fuse: store");
		return 2;
	}
	/* Locked as touched: the daemon must never itself wait on swap. */
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)) {
		perror("swapdev-fuse: mlockall");
		return 2;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		return 2;
	if (fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[1])) {
		fuse_session_destroy(se);
		return 2;
	}
	fprintf(stderr, "swapdev-fuse: serving %s/%s (%llu bytes, queue depth %llu)\n", argv[1],
		DEV_NAME, (unsigned long long)store_bytes, (unsigned long long)queue_depth);
	if (queue_depth == 1) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();

		if (!cfg)
			return 2;
		fuse_loop_cfg_set_max_threads(cfg, (unsigned)queue_depth);
		fuse_loop_cfg_set_idle_threads(cfg, (unsigned)queue_depth);
		rc = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	if (sd_run_finish(&run, "fuse"))
		rc = 1;
	return rc ? 1 : 0;
}
