// SPDX-License-Identifier: GPL-2.0
/*
 * rmem: a remote-memory block device for swap with per-request latency injection.
 *
 * The paper's device (Gao et al., OSDI'16, §3 "Latency-injection swap device"; artifact
 * NetSys/disaggregation, rmem/rmem.c) is a RAM-backed block device used as swap that
 * delays each paging request by a fixed latency plus size/bandwidth, or by the mean
 * simulated FCT of the request size read through /proc/rmem_cdf. This driver keeps those
 * semantics (the delay models are the shared core, ../core/sd_delay.c, compiled here with
 * -D__KERNEL__) and adds a real remote backend: the device's pages live in a buffer
 * registered by a memory server (rmem_server.c) and are moved with one-sided RDMA READ
 * and WRITE over an RC queue pair set up with rdma_cm; the server's accept private data
 * carries the buffer's address, size and rkey (rmem_proto.h).
 *
 * One device, /dev/rmem0, blk-mq with one hardware queue.
 *
 * Module parameters (/sys/module/rmem/parameters/, 0644 ones can change at run time):
 *   backend=ram|rdma     where the pages live (default ram: vmalloc'ed local memory)
 *   server=IP:PORT       the memory server (rdma backend)
 *   size_mb=N            device size in MiB (default 256)
 *   delay_model=NAME     a model of ../core/sd_models.def (none, fixed, ...)  (0644)
 *   latency_ns, bandwidth_bps   the fixed and link models: latency_ns + bytes*8e9/bandwidth_bps  (0644)
 *   seed                 fct-sample PRNG seed (0444)
 *   log_enable=0|1       record every request in the rmem trace ring (0644)
 *   log_capacity=N       ring size in records (0444, default 1048576)
 *
 * procfs:
 *   /proc/rmem_cdf     write "<pages> <fct_ns>" lines (the artifact's format, as written by
 *                      rmem/convert_fct_to_ns.py); a writer replaces the table on close;
 *                      read lists the non-zero entries in the same format.
 *   /proc/rmem_dist    write "<bytes> <cum_prob> <fct_us>" lines (export-fct --distribution)
 *                      for fct-sample; replaced on close.
 *   /proc/rmem_delay   write sizes in bytes (each write() holds whole numbers, at most a
 *                      page); read "<size_bytes> <delay_ns>" per size under the current
 *                      model, on the same open file (the lookup, for checking a table).
 *   /proc/rmem_log     read drains the trace: "<batch_id> <time_us> <±page> <npages>" lines
 *                      (epoch µs; '-' = read/swap-in), traces/paging.py read_rmem's format.
 *   /proc/rmem_stats   "key value" lines: request counts, per-request service time (queue_rq
 *                      entry to completion, ns: mean, exact minimum, quantiles) and
 *                      applied-delay quantiles; write resets.
 *
 * The delay is a busy-wait on ktime_get_ns() before the data moves, as rmem.c spins.
 * A lost connection (CM DISCONNECTED, or any failed work completion) fails in-flight and
 * later requests with BLK_STS_IOERR.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/inet.h>
#include <linux/ktime.h>
#include <linux/highmem.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "sd_delay.h"
#include "rmem_proto.h"

#define RMEM_MAX_SEGS 32
#define RMEM_MAX_SGE (2 * RMEM_MAX_SEGS)
#define RMEM_QUEUE_DEPTH 32
#define RMEM_MAX_POINTS 65536
#define RMEM_LINE_MAX 256

static char *backend = "ram";
module_param(backend, charp, 0444);
MODULE_PARM_DESC(backend, "ram or rdma");
static char *server = "";
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "memory server IPv4:port (rdma backend)");
static unsigned long size_mb = 256;
module_param(size_mb, ulong, 0444);
MODULE_PARM_DESC(size_mb, "device size in MiB");
static unsigned long latency_ns;
module_param(latency_ns, ulong, 0644);
MODULE_PARM_DESC(latency_ns, "fixed model: per-request latency (ns)");
static unsigned long bandwidth_bps;
module_param(bandwidth_bps, ulong, 0644);
MODULE_PARM_DESC(bandwidth_bps, "fixed model: bandwidth (bit/s), 0 = no transmission term");
static unsigned long seed = 1;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "fct-sample PRNG seed");
static bool log_enable;
module_param(log_enable, bool, 0644);
MODULE_PARM_DESC(log_enable, "record requests in /proc/rmem_log");
static unsigned int log_capacity = 1 << 20;
module_param(log_capacity, uint, 0444);
MODULE_PARM_DESC(log_capacity, "trace ring size in records");
static unsigned int connect_timeout_ms = 10000;
module_param(connect_timeout_ms, uint, 0444);
MODULE_PARM_DESC(connect_timeout_ms, "rdma connect timeout (ms)");

/* The names of the shared core's models, from its one list (../core/sd_models.def). */
static const char *const model_names[] = {
#define SD_MODEL(e, name, params, what) [SD_MODEL_##e] = name,
#include "sd_models.def"
#undef SD_MODEL
};
static int model_kind = SD_MODEL_NONE;

static int model_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(model_names, val);

	if (i < 0) {
		pr_err("delay_model=%s: expected one of:", val);
		for (i = 0; i < SD_MODEL_COUNT; i++)
			pr_cont(" %s", model_names[i]);
		pr_cont("\n");
		return -EINVAL;
	}
	WRITE_ONCE(model_kind, i);
	return 0;
}

static int model_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", model_names[READ_ONCE(model_kind)]);
}

static const struct kernel_param_ops model_ops = {
	.set = model_set,
	.get = model_get,
};
module_param_cb(delay_model, &model_ops, NULL, 0644);
MODULE_PARM_DESC(delay_model, "a delay model of the shared core (sd_models.def)");

struct rmem_rec {
	u64 time_us;
	u64 page;
	u32 npages;
	u32 is_read;
};

struct rmem_cmd {
	struct ib_cqe cqe;
	atomic_t pending;
	blk_status_t status;
	int nsge;
	u64 start_ns;
	enum dma_data_direction dir;
	struct ib_sge sge[RMEM_MAX_SGE];
	struct ib_rdma_wr wr[RMEM_MAX_SGE];
};

struct rmem_dev {
	struct blk_mq_tag_set tag_set;
	struct gendisk *disk;
	int major;
	u64 size_bytes;
	bool rdma;

	/* ram backend */
	void *ram;

	/* rdma backend */
	struct rdma_cm_id *cm_id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	bool qp_created;
	struct completion cm_done;
	int cm_error;
	bool connected;
	u64 remote_addr;
	u64 remote_size;
	u32 rkey;
	spinlock_t qp_lock;
	struct work_struct err_work;

	/* delay model (the shared core) */
	spinlock_t model_lock;
	struct sd_model model;
	struct mutex table_mutex; /* serialises table installs */

	/* statistics */
	spinlock_t stats_lock;
	u64 reads, writes, errors, bytes_read, bytes_written;
	struct sd_hist svc;
	struct sd_hist delay;

	/* trace ring */
	spinlock_t log_lock;
	struct rmem_rec *log;
	u32 log_head, log_len;
	u64 log_batch, log_dropped;
};

static struct rmem_dev *rdev;

/* ---- delay ---- */

/* The delay of a request of op (SD_OP_READ/WRITE) for bytes at byte offset pos, now. */
static u64 rmem_delay_for(struct rmem_dev *d, int op, u64 pos, u64 bytes)
{
	unsigned long flags;
	struct sd_req req = sd_req_bytes(op, pos, bytes, ktime_get_ns());
	u64 ns;

	spin_lock_irqsave(&d->model_lock, flags);
	d->model.kind = READ_ONCE(model_kind);
	sd_model_set_fixed(&d->model, READ_ONCE(latency_ns), READ_ONCE(bandwidth_bps));
	ns = sd_model_delay(&d->model, &req);
	spin_unlock_irqrestore(&d->model_lock, flags);
	return ns;
}

static void rmem_spin_ns(u64 ns)
{
	u64 end = ktime_get_ns() + ns;

	while (ktime_get_ns() < end)
		cpu_relax();
}

/* ---- statistics and trace ---- */

static void rmem_account(struct rmem_dev *d, bool is_read, u64 bytes, u64 svc_ns,
			 blk_status_t st)
{
	unsigned long flags;

	spin_lock_irqsave(&d->stats_lock, flags);
	if (st != BLK_STS_OK) {
		d->errors++;
	} else if (is_read) {
		d->reads++;
		d->bytes_read += bytes;
	} else {
		d->writes++;
		d->bytes_written += bytes;
	}
	if (st == BLK_STS_OK)
		sd_hist_add(&d->svc, svc_ns);
	spin_unlock_irqrestore(&d->stats_lock, flags);
}

static void rmem_log_add(struct rmem_dev *d, bool is_read, u64 pos, u64 bytes)
{
	unsigned long flags;
	struct rmem_rec *r;

	if (!READ_ONCE(log_enable) || !d->log)
		return;
	spin_lock_irqsave(&d->log_lock, flags);
	if (d->log_len == log_capacity) {
		d->log_dropped++;
	} else {
		r = &d->log[(d->log_head + d->log_len) % log_capacity];
		r->time_us = ktime_get_real_ns() / 1000;
		r->page = pos >> PAGE_SHIFT;
		r->npages = DIV_ROUND_UP(bytes, PAGE_SIZE);
		r->is_read = is_read;
		d->log_len++;
	}
	spin_unlock_irqrestore(&d->log_lock, flags);
}

/* ---- block I/O ---- */

static void rmem_finish(struct rmem_dev *d, struct request *rq, blk_status_t st)
{
	struct rmem_cmd *cmd = blk_mq_rq_to_pdu(rq);

	rmem_account(d, rq_data_dir(rq) == READ, blk_rq_bytes(rq),
		     ktime_get_ns() - cmd->start_ns, st);
	blk_mq_end_request(rq, st);
}

static void rmem_unmap(struct rmem_dev *d, struct rmem_cmd *cmd)
{
	int i;

	for (i = 0; i < cmd->nsge; i++)
		ib_dma_unmap_page(d->pd->device, cmd->sge[i].addr, cmd->sge[i].length,
				  cmd->dir);
	cmd->nsge = 0;
}

static void rmem_err_work(struct work_struct *w)
{
	struct rmem_dev *d = container_of(w, struct rmem_dev, err_work);

	/* Moves the QP to the error state: every outstanding WR completes with a flush error. */
	if (d->cm_id)
		rdma_disconnect(d->cm_id);
}

static void rmem_conn_lost(struct rmem_dev *d, const char *why)
{
	if (xchg(&d->connected, false)) {
		pr_err("connection to %s lost (%s): failing I/O\n", server, why);
		schedule_work(&d->err_work);
	}
}

static void rmem_rdma_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rmem_cmd *cmd = container_of(wc->wr_cqe, struct rmem_cmd, cqe);
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct rmem_dev *d = cq->cq_context;

	if (wc->status != IB_WC_SUCCESS) {
		WRITE_ONCE(cmd->status, BLK_STS_IOERR);
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_err("work completion error: %s (%d)\n",
			       ib_wc_status_msg(wc->status), wc->status);
		rmem_conn_lost(d, ib_wc_status_msg(wc->status));
	}
	if (atomic_dec_and_test(&cmd->pending)) {
		rmem_unmap(d, cmd);
		rmem_finish(d, rq, READ_ONCE(cmd->status));
	}
}

static blk_status_t rmem_rdma_rq(struct rmem_dev *d, struct request *rq, struct rmem_cmd *cmd,
				 u64 pos)
{
	struct ib_device *ibdev = d->pd->device;
	bool is_read = rq_data_dir(rq) == READ;
	const struct ib_send_wr *bad = NULL;
	struct req_iterator iter;
	struct bio_vec bv;
	unsigned long flags;
	u64 remote = d->remote_addr + pos;
	int i, n = 0, ret, posted;

	if (!READ_ONCE(d->connected))
		return BLK_STS_IOERR;
	cmd->dir = is_read ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	cmd->nsge = 0;
	rq_for_each_segment(bv, rq, iter) {
		u64 dma;

		if (n == RMEM_MAX_SGE)
			goto unmap;
		dma = ib_dma_map_page(ibdev, bv.bv_page, bv.bv_offset, bv.bv_len, cmd->dir);
		if (ib_dma_mapping_error(ibdev, dma))
			goto unmap;
		cmd->sge[n].addr = dma;
		cmd->sge[n].length = bv.bv_len;
		cmd->sge[n].lkey = d->pd->local_dma_lkey;
		cmd->nsge = ++n;
	}
	cmd->cqe.done = rmem_rdma_done;
	cmd->status = BLK_STS_OK;
	atomic_set(&cmd->pending, n);
	for (i = 0; i < n; i++) {
		struct ib_rdma_wr *wr = &cmd->wr[i];

		memset(wr, 0, sizeof(*wr));
		wr->wr.next = i + 1 < n ? &cmd->wr[i + 1].wr : NULL;
		wr->wr.wr_cqe = &cmd->cqe;
		wr->wr.sg_list = &cmd->sge[i];
		wr->wr.num_sge = 1;
		wr->wr.opcode = is_read ? IB_WR_RDMA_READ : IB_WR_RDMA_WRITE;
		wr->wr.send_flags = IB_SEND_SIGNALED;
		wr->remote_addr = remote;
		wr->rkey = d->rkey;
		remote += cmd->sge[i].length;
	}
	spin_lock_irqsave(&d->qp_lock, flags);
	ret = ib_post_send(d->cm_id->qp, &cmd->wr[0].wr, &bad);
	spin_unlock_irqrestore(&d->qp_lock, flags);
	if (ret) {
		/* WRs before *bad were posted and will complete; drop the rest. */
		posted = 0;
		while (posted < n && &cmd->wr[posted].wr != bad)
			posted++;
		pr_err("ib_post_send: %d\n", ret);
		WRITE_ONCE(cmd->status, BLK_STS_IOERR);
		if (atomic_sub_and_test(n - posted, &cmd->pending)) {
			rmem_unmap(d, cmd);
			rmem_finish(d, rq, BLK_STS_IOERR);
		}
		rmem_conn_lost(d, "post failed");
	}
	return BLK_STS_OK;
unmap:
	rmem_unmap(d, cmd);
	return BLK_STS_IOERR;
}

static void rmem_ram_rq(struct rmem_dev *d, struct request *rq, u64 pos)
{
	bool is_read = rq_data_dir(rq) == READ;
	struct req_iterator iter;
	struct bio_vec bv;

	rq_for_each_segment(bv, rq, iter) {
		void *p = bvec_kmap_local(&bv);

		if (is_read)
			memcpy(p, d->ram + pos, bv.bv_len);
		else
			memcpy(d->ram + pos, p, bv.bv_len);
		kunmap_local(p);
		pos += bv.bv_len;
	}
}

static blk_status_t rmem_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct rmem_dev *d = hctx->queue->queuedata;
	struct request *rq = bd->rq;
	struct rmem_cmd *cmd = blk_mq_rq_to_pdu(rq);
	u64 pos = (u64)blk_rq_pos(rq) << SECTOR_SHIFT;
	u64 bytes = blk_rq_bytes(rq);
	u64 delay;
	blk_status_t st;

	cmd->start_ns = ktime_get_ns();
	blk_mq_start_request(rq);
	switch (req_op(rq)) {
	case REQ_OP_FLUSH:
		blk_mq_end_request(rq, BLK_STS_OK);
		return BLK_STS_OK;
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	if (pos + bytes > d->size_bytes)
		return BLK_STS_IOERR;
	rmem_log_add(d, rq_data_dir(rq) == READ, pos, bytes);
	delay = rmem_delay_for(d, rq_data_dir(rq) == READ ? SD_OP_READ : SD_OP_WRITE, pos, bytes);
	if (delay) {
		unsigned long flags;

		rmem_spin_ns(delay);
		spin_lock_irqsave(&d->stats_lock, flags);
		sd_hist_add(&d->delay, delay);
		spin_unlock_irqrestore(&d->stats_lock, flags);
	}
	if (d->rdma) {
		st = rmem_rdma_rq(d, rq, cmd, pos);
		if (st != BLK_STS_OK)
			rmem_account(d, false, 0, 0, st);
		return st;
	}
	rmem_ram_rq(d, rq, pos);
	rmem_finish(d, rq, BLK_STS_OK);
	return BLK_STS_OK;
}

static const struct blk_mq_ops rmem_mq_ops = {
	.queue_rq = rmem_queue_rq,
};

static const struct block_device_operations rmem_fops = {
	.owner = THIS_MODULE,
};

/* ---- RDMA connection ---- */

static int rmem_create_qp(struct rmem_dev *d, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	int wrs = min_t(int, RMEM_QUEUE_DEPTH * RMEM_MAX_SGE, id->device->attrs.max_qp_wr);
	int ret;

	d->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(d->pd)) {
		ret = PTR_ERR(d->pd);
		d->pd = NULL;
		return ret;
	}
	d->cq = ib_alloc_cq(id->device, d, wrs + 1, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(d->cq)) {
		ret = PTR_ERR(d->cq);
		d->cq = NULL;
		return ret;
	}
	attr.send_cq = d->cq;
	attr.recv_cq = d->cq;
	attr.cap.max_send_wr = wrs;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, d->pd, &attr);
	if (ret)
		return ret;
	d->qp_created = true;
	return 0;
}

static void rmem_cm_result(struct rmem_dev *d, int err)
{
	d->cm_error = err;
	complete(&d->cm_done);
}

static int rmem_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rmem_dev *d = id->context;
	struct rdma_conn_param param = {};
	const struct rmem_accept_data *ad;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, 2000);
		if (ret)
			rmem_cm_result(d, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = rmem_create_qp(d, id);
		if (ret) {
			rmem_cm_result(d, ret);
			break;
		}
		param.initiator_depth = min_t(int, 16, id->device->attrs.max_qp_init_rd_atom);
		param.responder_resources = param.initiator_depth;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		ret = rdma_connect_locked(id, &param);
		if (ret)
			rmem_cm_result(d, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ad = ev->param.conn.private_data;
		if (!ad || ev->param.conn.private_data_len < sizeof(*ad) ||
		    le32_to_cpu(ad->magic) != RMEM_PROTO_MAGIC ||
		    le32_to_cpu(ad->version) != RMEM_PROTO_VERSION) {
			pr_err("server %s: accept data is not an rmem server's (len %u)\n", server,
			       ev->param.conn.private_data_len);
			rmem_cm_result(d, -EPROTO);
			break;
		}
		d->remote_addr = le64_to_cpu(ad->addr);
		d->remote_size = le64_to_cpu(ad->size);
		d->rkey = le32_to_cpu(ad->rkey);
		WRITE_ONCE(d->connected, true);
		rmem_cm_result(d, 0);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rmem_cm_result(d, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		pr_err("server %s: %s\n", server, rdma_event_msg(ev->event));
		rmem_cm_result(d, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rmem_conn_lost(d, rdma_event_msg(ev->event));
		break;
	default:
		break;
	}
	return 0;
}

static int rmem_connect(struct rmem_dev *d)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(server, ':');
	unsigned int port;
	int ret;

	if (!colon || colon - server >= sizeof(host) || kstrtouint(colon + 1, 10, &port) ||
	    port == 0 || port > 65535) {
		pr_err("server=%s: expected IPv4:PORT\n", server);
		return -EINVAL;
	}
	memcpy(host, server, colon - server);
	host[colon - server] = '\0';
	if (!in4_pton(host, -1, (u8 *)&sin.sin_addr.s_addr, '\0', NULL)) {
		pr_err("server=%s: '%s' is not an IPv4 address\n", server, host);
		return -EINVAL;
	}
	sin.sin_port = htons(port);
	init_completion(&d->cm_done);
	d->cm_id = rdma_create_id(&init_net, rmem_cm_handler, d, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(d->cm_id)) {
		ret = PTR_ERR(d->cm_id);
		d->cm_id = NULL;
		return ret;
	}
	ret = rdma_resolve_addr(d->cm_id, NULL, (struct sockaddr *)&sin, 2000);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&d->cm_done, msecs_to_jiffies(connect_timeout_ms))) {
		pr_err("server %s: no connection after %u ms\n", server, connect_timeout_ms);
		return -ETIMEDOUT;
	}
	if (d->cm_error) {
		pr_err("server %s: connect failed: %d\n", server, d->cm_error);
		return d->cm_error;
	}
	if (d->remote_size < d->size_bytes) {
		pr_err("server %s: buffer of %llu bytes < size_mb=%lu\n", server, d->remote_size,
		       size_mb);
		return -ENOSPC;
	}
	pr_info("connected to %s: remote buffer %llu bytes at 0x%llx rkey 0x%x\n", server,
		d->remote_size, d->remote_addr, d->rkey);
	return 0;
}

static void rmem_rdma_teardown(struct rmem_dev *d)
{
	if (!d->cm_id)
		return;
	WRITE_ONCE(d->connected, false);
	cancel_work_sync(&d->err_work);
	if (d->qp_created) {
		rdma_disconnect(d->cm_id);
		ib_drain_qp(d->cm_id->qp);
		rdma_destroy_qp(d->cm_id);
	}
	/* After the id: no CM callback can run any more. */
	rdma_destroy_id(d->cm_id);
	d->cm_id = NULL;
	if (d->cq)
		ib_free_cq(d->cq);
	if (d->pd)
		ib_dealloc_pd(d->pd);
}

/* ---- procfs: tables ---- */

struct rmem_table_file {
	int fmt;
	int error;
	u64 lineno;
	u32 used;
	char line[RMEM_LINE_MAX];
	struct sd_model *m; /* staging */
	struct sd_fct_point *points;
};

static const char *const fmt_text[] = {
	[SD_FMT_BYTES_US] = "'<bytes> <fct_us>'",
	[SD_FMT_PAGES_NS] = "'<pages> <fct_ns>'",
	[SD_FMT_DIST] = "'<bytes> <cum_prob> <fct_us>'",
};

static int rmem_table_open(struct inode *inode, struct file *f, int fmt)
{
	struct rmem_table_file *t;

	if (!(f->f_mode & FMODE_WRITE))
		return 0;
	t = kvzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->m = kvzalloc(sizeof(*t->m), GFP_KERNEL);
	if (!t->m)
		goto nomem;
	t->fmt = fmt;
	sd_model_init(t->m, fmt == SD_FMT_DIST ? SD_MODEL_FCT_SAMPLE : SD_MODEL_FCT_MEAN);
	if (fmt == SD_FMT_DIST) {
		t->points = kvcalloc(RMEM_MAX_POINTS, sizeof(*t->points), GFP_KERNEL);
		if (!t->points)
			goto nomem;
		sd_model_set_points(t->m, t->points, RMEM_MAX_POINTS);
	}
	f->private_data = t;
	return 0;
nomem:
	kvfree(t->m);
	kvfree(t);
	return -ENOMEM;
}

static int rmem_table_line(struct rmem_table_file *t, const char *name)
{
	struct sd_line l;
	int field, rc;

	t->lineno++;
	rc = sd_parse_line(t->line, t->used, t->fmt, &l, &field);
	if (rc == SD_OK)
		rc = sd_model_add(t->m, t->fmt, &l);
	if (rc == SD_ERR_SKIPPED) {
		/* rmem.c cdf_write prints "Wrong size" and goes on. */
		pr_warn("%s: line %llu: size outside 1..4095 pages, ignored (as rmem.c)\n", name,
			t->lineno);
		rc = SD_OK;
	}
	if (rc != SD_OK) {
		pr_err("%s: line %llu field %d: expected %s (error %d)\n", name, t->lineno, field,
		       fmt_text[t->fmt], rc);
		t->error = -EINVAL;
	}
	t->used = 0;
	return t->error;
}

static ssize_t rmem_table_write(struct file *f, const char __user *ubuf, size_t len,
				const char *name)
{
	struct rmem_table_file *t = f->private_data;
	size_t i;
	char c;

	if (!t)
		return -EBADF;
	if (t->error)
		return t->error;
	for (i = 0; i < len; i++) {
		if (get_user(c, ubuf + i))
			return -EFAULT;
		if (c == '\n') {
			if (rmem_table_line(t, name))
				return t->error;
			continue;
		}
		if (t->used == RMEM_LINE_MAX) {
			pr_err("%s: line %llu longer than %d bytes\n", name, t->lineno + 1,
			       RMEM_LINE_MAX);
			t->error = -EINVAL;
			return t->error;
		}
		t->line[t->used++] = c;
	}
	return len;
}

static int rmem_table_release(struct inode *inode, struct file *f, const char *name)
{
	struct rmem_table_file *t = f->private_data;
	struct sd_fct_point *old = NULL;
	unsigned long flags;
	int rc;

	if (!t)
		return 0;
	if (!t->error && t->used)
		rmem_table_line(t, name);
	if (!t->error) {
		rc = sd_model_finalize(t->m);
		if (rc) {
			pr_err("%s: table incomplete (no entry, or a CDF not ending at 1): %d\n", name,
			       rc);
			t->error = -EINVAL;
		}
	}
	if (!t->error) {
		mutex_lock(&rdev->table_mutex);
		spin_lock_irqsave(&rdev->model_lock, flags);
		if (t->fmt == SD_FMT_DIST) {
			old = rdev->model.points;
			rdev->model.points = t->points;
			rdev->model.npoints = t->m->npoints;
			rdev->model.cap_points = t->m->cap_points;
			t->points = NULL;
		} else {
			memcpy(rdev->model.fct_by_pages, t->m->fct_by_pages,
			       sizeof(t->m->fct_by_pages));
			rdev->model.mean_entries = t->m->mean_entries;
		}
		spin_unlock_irqrestore(&rdev->model_lock, flags);
		mutex_unlock(&rdev->table_mutex);
		pr_info("%s: table of %llu lines installed\n", name, t->lineno);
	}
	kvfree(old);
	kvfree(t->points);
	kvfree(t->m);
	kvfree(t);
	return 0;
}

static int rmem_cdf_open(struct inode *inode, struct file *f)
{
	return rmem_table_open(inode, f, SD_FMT_PAGES_NS);
}

static ssize_t rmem_cdf_write(struct file *f, const char __user *buf, size_t len, loff_t *off)
{
	return rmem_table_write(f, buf, len, "/proc/rmem_cdf");
}

static int rmem_cdf_release(struct inode *inode, struct file *f)
{
	return rmem_table_release(inode, f, "/proc/rmem_cdf");
}

/* Read: the non-zero fct_by_pages entries, "<pages> <fct_ns>" per line. */
static ssize_t rmem_cdf_read(struct file *f, char __user *ubuf, size_t len, loff_t *off)
{
	char *buf;
	size_t n = 0, cap = SD_FCT_MAX_PAGES * 42;
	unsigned long flags;
	ssize_t ret;
	u32 i;

	buf = kvmalloc(cap, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	spin_lock_irqsave(&rdev->model_lock, flags);
	for (i = 1; i < SD_FCT_MAX_PAGES; i++) {
		if (!rdev->model.fct_by_pages[i])
			continue;
		n += sd_u64_to_dec(buf + n, i);
		buf[n++] = ' ';
		n += sd_u64_to_dec(buf + n, rdev->model.fct_by_pages[i]);
		buf[n++] = '\n';
	}
	spin_unlock_irqrestore(&rdev->model_lock, flags);
	ret = simple_read_from_buffer(ubuf, len, off, buf, n);
	kvfree(buf);
	return ret;
}

static const struct proc_ops rmem_cdf_ops = {
	.proc_open = rmem_cdf_open,
	.proc_read = rmem_cdf_read,
	.proc_write = rmem_cdf_write,
	.proc_release = rmem_cdf_release,
	.proc_lseek = default_llseek,
};

static int rmem_dist_open(struct inode *inode, struct file *f)
{
	return rmem_table_open(inode, f, SD_FMT_DIST);
}

static ssize_t rmem_dist_write(struct file *f, const char __user *buf, size_t len, loff_t *off)
{
	return rmem_table_write(f, buf, len, "/proc/rmem_dist");
}

static int rmem_dist_release(struct inode *inode, struct file *f)
{
	return rmem_table_release(inode, f, "/proc/rmem_dist");
}

static const struct proc_ops rmem_dist_ops = {
	.proc_open = rmem_dist_open,
	.proc_write = rmem_dist_write,
	.proc_release = rmem_dist_release,
};

/* ---- procfs: delay lookup ---- */

struct rmem_query {
	size_t n;
	char out[PAGE_SIZE * 4];
};

static int rmem_delay_open(struct inode *inode, struct file *f)
{
	struct rmem_query *q = kvzalloc(sizeof(*q), GFP_KERNEL);

	if (!q)
		return -ENOMEM;
	f->private_data = q;
	return 0;
}

static ssize_t rmem_delay_write(struct file *f, const char __user *ubuf, size_t len, loff_t *off)
{
	struct rmem_query *q = f->private_data;
	char *text, *p, *tok;
	u64 size, ns;

	if (len > PAGE_SIZE)
		return -EINVAL;
	text = memdup_user_nul(ubuf, len);
	if (IS_ERR(text))
		return PTR_ERR(text);
	p = text;
	while ((tok = strsep(&p, " \t\n"))) {
		if (!*tok)
			continue;
		if (kstrtou64(tok, 10, &size)) {
			pr_err("/proc/rmem_delay: '%s' is not a size in bytes\n", tok);
			kfree(text);
			return -EINVAL;
		}
		if (q->n + 44 > sizeof(q->out)) {
			kfree(text);
			return -ENOSPC;
		}
		ns = rmem_delay_for(rdev, SD_OP_READ, 0, size);
		q->n += sd_u64_to_dec(q->out + q->n, size);
		q->out[q->n++] = ' ';
		q->n += sd_u64_to_dec(q->out + q->n, ns);
		q->out[q->n++] = '\n';
	}
	kfree(text);
	return len;
}

static ssize_t rmem_delay_read(struct file *f, char __user *ubuf, size_t len, loff_t *off)
{
	struct rmem_query *q = f->private_data;

	return simple_read_from_buffer(ubuf, len, off, q->out, q->n);
}

static int rmem_delay_release(struct inode *inode, struct file *f)
{
	kvfree(f->private_data);
	return 0;
}

static const struct proc_ops rmem_delay_ops = {
	.proc_open = rmem_delay_open,
	.proc_read = rmem_delay_read,
	.proc_write = rmem_delay_write,
	.proc_release = rmem_delay_release,
	.proc_lseek = default_llseek,
};

/* ---- procfs: trace log ---- */

static ssize_t rmem_log_read(struct file *f, char __user *ubuf, size_t len, loff_t *off)
{
	char line[96];
	size_t done = 0;
	unsigned long flags;
	struct rmem_rec r;
	u64 batch, n;

	while (done + sizeof(line) <= len) {
		spin_lock_irqsave(&rdev->log_lock, flags);
		if (!rdev->log_len) {
			spin_unlock_irqrestore(&rdev->log_lock, flags);
			break;
		}
		r = rdev->log[rdev->log_head];
		rdev->log_head = (rdev->log_head + 1) % log_capacity;
		rdev->log_len--;
		batch = rdev->log_batch++;
		spin_unlock_irqrestore(&rdev->log_lock, flags);
		n = sd_rmem_format(line, sizeof(line), batch, r.time_us, r.is_read, r.page,
				   r.npages);
		if (copy_to_user(ubuf + done, line, n))
			return done ? done : -EFAULT;
		done += n;
	}
	if (!done && len < sizeof(line) && rdev->log_len)
		return -EINVAL; /* buffer too small for one line */
	return done;
}

static const struct proc_ops rmem_log_ops = {
	.proc_read = rmem_log_read,
};

/* ---- procfs: statistics ---- */

static u64 hist_quantile(const struct sd_hist *h, u32 permille)
{
	u64 target, cum = 0;
	u32 i;

	if (!h->n)
		return 0;
	target = DIV_ROUND_UP(h->n * permille, 1000);
	for (i = 0; i < SD_HIST_BUCKETS; i++) {
		cum += h->counts[i];
		if (cum >= target && cum)
			return sd_hist_lower(i);
	}
	return h->max_ns;
}

static ssize_t rmem_stats_read(struct file *f, char __user *ubuf, size_t len, loff_t *off)
{
	struct sd_hist *svc, *dl;
	unsigned long flags;
	char *buf;
	size_t n;
	ssize_t ret;

	svc = kvmalloc(2 * sizeof(*svc), GFP_KERNEL);
	buf = kmalloc(2048, GFP_KERNEL);
	if (!svc || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	dl = svc + 1;
	spin_lock_irqsave(&rdev->stats_lock, flags);
	*svc = rdev->svc;
	*dl = rdev->delay;
	n = scnprintf(buf, 2048,
		      "backend %s\nconnected %d\ndelay_model %s\nreads %llu\nwrites %llu\n"
		      "errors %llu\nbytes_read %llu\nbytes_written %llu\n",
		      rdev->rdma ? "rdma" : "ram", rdev->rdma ? READ_ONCE(rdev->connected) : 1,
		      model_names[READ_ONCE(model_kind)], rdev->reads, rdev->writes,
		      rdev->errors, rdev->bytes_read, rdev->bytes_written);
	spin_unlock_irqrestore(&rdev->stats_lock, flags);
	n += scnprintf(buf + n, 2048 - n,
		       "svc_n %llu\nsvc_mean_ns %llu\nsvc_min_ns %llu\nsvc_p50_ns %llu\n"
		       "svc_p99_ns %llu\ndelay_n %llu\ndelay_mean_ns %llu\ndelay_p50_ns %llu\n"
		       "log_pending %u\nlog_dropped %llu\n",
		       svc->n, svc->n ? svc->sum_ns / svc->n : 0, svc->n ? svc->min_ns : 0,
		       hist_quantile(svc, 500), hist_quantile(svc, 990), dl->n,
		       dl->n ? dl->sum_ns / dl->n : 0,
		       hist_quantile(dl, 500), READ_ONCE(rdev->log_len),
		       READ_ONCE(rdev->log_dropped));
	ret = simple_read_from_buffer(ubuf, len, off, buf, n);
out:
	kfree(buf);
	kvfree(svc);
	return ret;
}

static ssize_t rmem_stats_write(struct file *f, const char __user *ubuf, size_t len, loff_t *off)
{
	unsigned long flags;

	spin_lock_irqsave(&rdev->stats_lock, flags);
	rdev->reads = rdev->writes = rdev->errors = 0;
	rdev->bytes_read = rdev->bytes_written = 0;
	sd_hist_init(&rdev->svc);
	sd_hist_init(&rdev->delay);
	spin_unlock_irqrestore(&rdev->stats_lock, flags);
	return len;
}

static const struct proc_ops rmem_stats_ops = {
	.proc_read = rmem_stats_read,
	.proc_write = rmem_stats_write,
	.proc_lseek = default_llseek,
};

static const struct {
	const char *name;
	umode_t mode;
	const struct proc_ops *ops;
} rmem_procs[] = {
	{ "rmem_cdf", 0644, &rmem_cdf_ops },
	{ "rmem_dist", 0200, &rmem_dist_ops },
	{ "rmem_delay", 0600, &rmem_delay_ops },
	{ "rmem_log", 0400, &rmem_log_ops },
	{ "rmem_stats", 0644, &rmem_stats_ops },
};

static void rmem_remove_procs(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(rmem_procs); i++)
		remove_proc_entry(rmem_procs[i].name, NULL);
}

/* ---- module ---- */

static void rmem_free(struct rmem_dev *d)
{
	rmem_rdma_teardown(d);
	vfree(d->ram);
	kvfree(d->model.points);
	vfree(d->log);
	kvfree(d);
}

static int __init rmem_init(void)
{
	struct queue_limits lim = {
		.logical_block_size = PAGE_SIZE,
		.physical_block_size = PAGE_SIZE,
		.max_hw_sectors = RMEM_MAX_SEGS * (PAGE_SIZE >> SECTOR_SHIFT),
		.max_segments = RMEM_MAX_SEGS,
		.max_segment_size = PAGE_SIZE,
	};
	struct rmem_dev *d;
	int ret, i;

	if (!size_mb || size_mb > (1UL << 20)) {
		pr_err("size_mb=%lu: expected 1..1048576\n", size_mb);
		return -EINVAL;
	}
	if (!log_capacity) {
		pr_err("log_capacity must be > 0\n");
		return -EINVAL;
	}
	d = kvzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	rdev = d;
	d->size_bytes = (u64)size_mb << 20;
	spin_lock_init(&d->qp_lock);
	spin_lock_init(&d->model_lock);
	spin_lock_init(&d->stats_lock);
	spin_lock_init(&d->log_lock);
	mutex_init(&d->table_mutex);
	INIT_WORK(&d->err_work, rmem_err_work);
	sd_model_init(&d->model, SD_MODEL_NONE);
	sd_model_seed(&d->model, seed);
	sd_hist_init(&d->svc);
	sd_hist_init(&d->delay);
	d->log = vmalloc_array(log_capacity, sizeof(*d->log));
	if (!d->log) {
		ret = -ENOMEM;
		goto err;
	}

	if (!strcmp(backend, "rdma")) {
		d->rdma = true;
		ret = rmem_connect(d);
		if (ret)
			goto err;
	} else if (!strcmp(backend, "ram")) {
		d->ram = vzalloc(d->size_bytes);
		if (!d->ram) {
			ret = -ENOMEM;
			goto err;
		}
	} else {
		pr_err("backend=%s: expected ram or rdma\n", backend);
		ret = -EINVAL;
		goto err;
	}

	d->major = register_blkdev(0, "rmem");
	if (d->major < 0) {
		ret = d->major;
		goto err;
	}
	d->tag_set.ops = &rmem_mq_ops;
	d->tag_set.nr_hw_queues = 1;
	d->tag_set.queue_depth = RMEM_QUEUE_DEPTH;
	d->tag_set.numa_node = NUMA_NO_NODE;
	d->tag_set.cmd_size = sizeof(struct rmem_cmd);
	d->tag_set.flags = BLK_MQ_F_SHOULD_MERGE;
	d->tag_set.driver_data = d;
	ret = blk_mq_alloc_tag_set(&d->tag_set);
	if (ret)
		goto err_blkdev;
	d->disk = blk_mq_alloc_disk(&d->tag_set, &lim, d);
	if (IS_ERR(d->disk)) {
		ret = PTR_ERR(d->disk);
		goto err_tags;
	}
	d->disk->major = d->major;
	d->disk->first_minor = 0;
	d->disk->minors = 1;
	d->disk->fops = &rmem_fops;
	d->disk->private_data = d;
	snprintf(d->disk->disk_name, DISK_NAME_LEN, "rmem0");
	set_capacity(d->disk, d->size_bytes >> SECTOR_SHIFT);

	for (i = 0; i < ARRAY_SIZE(rmem_procs); i++) {
		if (!proc_create(rmem_procs[i].name, rmem_procs[i].mode, NULL, rmem_procs[i].ops)) {
			ret = -ENOMEM;
			goto err_procs;
		}
	}
	ret = add_disk(d->disk);
	if (ret)
		goto err_procs;
	pr_info("rmem0: %lu MiB, backend %s\n", size_mb, backend);
	return 0;

err_procs:
	rmem_remove_procs();
	put_disk(d->disk);
err_tags:
	blk_mq_free_tag_set(&d->tag_set);
err_blkdev:
	unregister_blkdev(d->major, "rmem");
err:
	rmem_free(d);
	rdev = NULL;
	return ret;
}

static void __exit rmem_exit(void)
{
	struct rmem_dev *d = rdev;

	del_gendisk(d->disk);
	put_disk(d->disk);
	blk_mq_free_tag_set(&d->tag_set);
	unregister_blkdev(d->major, "rmem");
	rmem_remove_procs();
	pr_info("rmem0 removed: reads=%llu writes=%llu errors=%llu\n", d->reads, d->writes,
		d->errors);
	rmem_free(d);
	rdev = NULL;
}

module_init(rmem_init);
module_exit(rmem_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Remote-memory (RDMA or RAM) swap block device with latency injection");
